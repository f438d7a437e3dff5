import type { AgentRunner } from "../core/agent-runner.js";
import type { AuthorityPort } from "../core/identity.js";
import type { ToolRuntime } from "../core/tool-runtime.js";
import type { ReplyTarget } from "../core/types.js";
import type { Job } from "./job.js";
import { jobApprover, promptJobToolSet, runRefusal } from "./job-authority.js";
import { shellOutputText } from "./report.js";

/** Runs one job's work; never throws for job failures (they come back as ok: false). */
export interface JobExecutor {
  execute(job: Job, runId: number, signal: AbortSignal): Promise<{ ok: boolean; output: string }>;
}

/** Where a job acts "from": its delivery chat, or a pseudo-target naming the job. */
export function jobTarget(job: Job): ReplyTarget {
  return job.deliver.chat ?? { channel: "cron", chatId: String(job.id) };
}

/**
 * Shell jobs go through the registered `shell` tool (every guard, approval, audit and redaction applies);
 * agent jobs run as an isolated agent turn in a session of their own; message jobs are their text. Every run
 * carries its creator's authority: the creator is the sender, nobody is there to ask (`canAsk: false`), and
 * approval requests go to the creator in the chat the job was made from.
 */
export function createJobExecutor(deps: {
  tools: Pick<ToolRuntime, "execute" | "resolveToolSet">;
  agent: AgentRunner;
  authority: () => AuthorityPort;
}): JobExecutor {
  return {
    async execute(job, runId, signal) {
      if (job.kind === "message") return { ok: true, output: job.payload };
      const refusal = runRefusal(job);
      if (refusal) return { ok: false, output: refusal };
      const sender = job.creator.identity;
      const approver = jobApprover(job, deps.authority());
      if (job.kind === "shell") {
        const result = await deps.tools.execute(
          {
            id: `cron-${job.id}-${runId}`,
            type: "function",
            function: { name: "shell", arguments: JSON.stringify({ command: job.payload }) },
          },
          ["shell"],
          {
            sessionKey: `cron:${job.id}`,
            agent: job.agent ?? job.creator.agent ?? "main",
            target: jobTarget(job),
            userId: sender.userId,
            signal,
            depth: 0,
            origin: "schedule",
            sender,
            canAsk: false,
            ...(approver ? { approver } : {}),
          },
        );
        const { ok, text } = shellOutputText(result);
        return { ok, output: text };
      }
      const toolSet = promptJobToolSet(job, (set) => deps.tools.resolveToolSet(set));
      const input: Parameters<AgentRunner["run"]>[0] = {
        agent: job.agent ?? job.creator.agent,
        prompt: job.payload,
        // A session per run: a scheduled report never leaks into a chat's history or into the next run.
        sessionKey: `cron:${job.id}:${runId}`,
        target: jobTarget(job),
        toolSet,
        // The creator's tools, narrowed by the job's own set, bound the run and anything it delegates to.
        ...(job.creator.toolNames
          ? { toolLimit: Array.isArray(toolSet) ? toolSet : job.creator.toolNames }
          : {}),
        signal,
        origin: "schedule",
        sender,
        ...(approver ? { approver } : {}),
      };
      const answer = await deps.agent.run(input);
      return { ok: answer.ok, output: answer.text };
    },
  };
}
