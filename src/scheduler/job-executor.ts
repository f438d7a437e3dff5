import type { AgentRunner } from "../core/agent-runner.js";
import type { AuthorityPort } from "../core/identity.js";
import type { ToolRuntime } from "../core/tool-runtime.js";
import {
  type ActionRunner,
  type ActionSource,
  type ActionWork,
  createActionRunner,
} from "./action-runner.js";
import type { Job } from "./job.js";

/** Runs one job's work; never throws for job failures (they come back as ok: false). */
export interface JobExecutor {
  execute(job: Job, runId: number, signal: AbortSignal): Promise<{ ok: boolean; output: string }>;
}

/** A job as the action runner names it: `cron:<id>`, runs of origin `schedule`. */
export function jobSource(job: Pick<Job, "id">): ActionSource {
  return { kind: "cron", id: String(job.id), label: `job #${job.id}`, origin: "schedule" };
}

function jobWork(job: Job): ActionWork {
  if (job.kind === "message") return { kind: "message", text: job.payload };
  if (job.kind === "shell") return { kind: "shell", command: job.payload, agent: job.agent };
  return {
    kind: "prompt",
    prompt: job.payload,
    agent: job.agent,
    toolSet: job.toolSet,
    allowAfterUntrusted: job.allowAfterUntrusted,
  };
}

/**
 * A job's run through the one action runner (src/scheduler/action-runner.ts): shell jobs go through the
 * registered `shell` tool, agent jobs run as an isolated agent turn, message jobs are their text; every run
 * carries its creator's authority.
 */
export function createJobExecutor(
  deps:
    | { runner: ActionRunner }
    | {
        tools: Pick<ToolRuntime, "execute" | "resolveToolSet">;
        agent: AgentRunner;
        authority: () => AuthorityPort;
      },
): JobExecutor {
  const runner = "runner" in deps ? deps.runner : createActionRunner(deps);
  return {
    async execute(job, runId, signal) {
      const owner = {
        creator: job.creator,
        source: job.source,
        createdFrom: job.createdFrom,
        chat: job.deliver.chat,
      };
      const { ok, text } = await runner.run({
        from: jobSource(job),
        owner,
        work: jobWork(job),
        run: runId,
        signal,
      });
      return { ok, output: text };
    },
  };
}
