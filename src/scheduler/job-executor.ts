import type { AgentRunner } from "../app/feature.js";
import { ownerIdentity } from "../core/identity.js";
import type { ToolRuntime } from "../core/tool-runtime.js";
import type { ReplyTarget } from "../core/types.js";
import type { Job } from "./job.js";
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
 * agent jobs run as an isolated agent turn in a session of their own; message jobs are their text.
 */
export function createJobExecutor(deps: {
  tools: Pick<ToolRuntime, "execute">;
  agent: AgentRunner;
}): JobExecutor {
  return {
    async execute(job, runId, signal) {
      if (job.kind === "message") return { ok: true, output: job.payload };
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
            agent: job.agent ?? "main",
            target: jobTarget(job),
            userId: "cron",
            signal,
            depth: 0,
            origin: "schedule",
            sender: ownerIdentity(),
            canAsk: false,
          },
        );
        const { ok, text } = shellOutputText(result);
        return { ok, output: text };
      }
      const answer = await deps.agent.run({
        agent: job.agent,
        prompt: job.payload,
        // A session per run: a scheduled report never leaks into a chat's history or into the next run.
        sessionKey: `cron:${job.id}:${runId}`,
        target: jobTarget(job),
        toolSet: job.toolSet ?? "default",
        signal,
        origin: "schedule",
        sender: ownerIdentity(),
      });
      return { ok: answer.ok, output: answer.text };
    },
  };
}
