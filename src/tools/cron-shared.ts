import { z } from "zod";
import type { JobCreator, JobSpec } from "../scheduler/job.js";
import type { JobOrigin, Scheduler } from "../scheduler/scheduler.js";
import { SchedulerError } from "../scheduler/scheduler-error.js";
import type { ToolContext } from "./context.js";
import { ToolError } from "./define-tool.js";

/** The scheduler service the scheduler feature registers as `services.scheduler`. */
export function schedulerOf(context: Pick<ToolContext, "services">): Scheduler {
  const scheduler = context.services.scheduler;
  if (!scheduler) {
    throw new ToolError(
      "cron.unavailable",
      "The scheduler is not running in this Magpie; scheduling is unavailable.",
    );
  }
  return scheduler;
}

/** Runs a scheduler call, turning its errors into tool errors the model can act on. */
export async function schedulerCall<T>(action: () => T | Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof SchedulerError) throw new ToolError(error.code, error.message);
    throw error;
  }
}

export const jobIdSchema = z
  .union([z.string().min(1), z.number().int()])
  .describe("The job's id (from cron_list), or its exact name.");

export const deliverSchema = z
  .object({
    channel: z
      .string()
      .min(1)
      .optional()
      .describe("Channel to post the report in (default: this chat's channel)."),
    chat_id: z.string().min(1).optional().describe("Chat id in that channel (default: this chat)."),
    pushover: z.boolean().optional().describe("Also send the report to the phone via Pushover."),
    ntfy: z.boolean().optional().describe("Also publish the report to the owner's ntfy topic."),
    mode: z
      .enum(["always", "on_error", "on_success", "none"])
      .optional()
      .describe("When to deliver: always (default), on_error, on_success or none."),
  })
  .describe("Where the job's output goes. Default: this chat, every run.");

/** Job fields shared by cron_add and schedule. */
export const jobFields = {
  name: z.string().min(1).optional().describe("A short name for the job."),
  expression: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Cron expression: 5 fields "min hour day month weekday" (e.g. "0 8 * * 1-5"), or 6 with seconds first.',
    ),
  delay: z.string().min(1).optional().describe("Run once after this delay instead: 30s, 30m, 2h, 1d."),
  at: z.string().min(1).optional().describe("Run once at this ISO time instead (e.g. 2026-05-01T08:00)."),
  command: z.string().min(1).optional().describe("Shell command to run (a shell job)."),
  prompt: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Instead of a command: a task for the assistant, run as its own agent turn; the answer is the report.",
    ),
  message: z.string().min(1).optional().describe("Instead of a command: fixed text to send (a reminder)."),
  timezone: z
    .string()
    .min(1)
    .optional()
    .describe("IANA time zone for the expression (default: the configured one)."),
  deliver: deliverSchema.optional(),
};

/** What the shared job fields parse to (derived from the schema, so the two can't drift apart). */
type JobFieldInput = z.output<z.ZodObject<typeof jobFields>>;

/** Tool input (snake_case) → scheduler job spec. */
export function specOf(input: JobFieldInput): JobSpec {
  const { deliver, ...rest } = input;
  return {
    ...rest,
    ...(deliver
      ? {
          deliver: {
            channel: deliver.channel,
            chatId: deliver.chat_id,
            pushover: deliver.pushover,
            ...(deliver.ntfy ? { ntfy: true } : {}),
            mode: deliver.mode,
          },
        }
      : {}),
  };
}

/** The job's creator: this turn's sender, agent and tools (DESIGN.md → "Jobs carry their creator's authority"). */
export function creatorOf(context: ToolContext): JobCreator {
  return { identity: context.sender, agent: context.agent, toolNames: [...context.allowedTools] };
}

/**
 * Who makes jobs in this turn and from where: the creator, and the chat the request came from (the default
 * report target and where approvals go; no reply threading).
 */
export function originOf(context: ToolContext): JobOrigin {
  const { channel, chatId, threadId } = context.target;
  // A scheduled agent turn without a chat acts from the pseudo-channel "cron": nothing to deliver to there.
  const fromChat = channel !== "cron";
  return {
    createdFrom: fromChat ? { channel, chatId, ...(threadId ? { threadId } : {}) } : undefined,
    source: "chat",
    createdBy: context.sessionKey,
    creator: creatorOf(context),
  };
}
