import { ownerIdentity } from "../core/identity.js";
import type { ReplyTarget } from "../core/types.js";
import { instantOfLocalIso, isValidTimeZone } from "../lib/zoned-time.js";
import { compileCron } from "./cron-expression.js";
import type { Delivery, Job, JobCreator, JobKind, JobSpec } from "./job.js";
import type { NewJob } from "./job-store.js";
import { parseAt, parseDelay } from "./one-shot.js";
import { SchedulerError } from "./scheduler-error.js";

export interface PlanContext {
  defaultTimezone: string;
  now: number;
  /** The chat the job is created from: its default delivery target. */
  createdFrom?: ReplyTarget;
  source: Job["source"];
  createdBy?: string;
  /** Whose authority the job carries; default: the owner's (config, CLI). */
  creator?: JobCreator;
}

/** Validates a job description and turns it into a storable job with its first run time. */
export function planJob(spec: JobSpec, context: PlanContext): NewJob {
  const timezone = spec.timezone ?? context.defaultTimezone;
  if (!isValidTimeZone(timezone)) {
    throw new SchedulerError(
      "cron.invalid_timezone",
      `Unknown time zone "${timezone}" — use an IANA name like Europe/Berlin or UTC.`,
    );
  }
  const { kind, payload } = payloadOf(spec);
  const schedules = [spec.expression, spec.delay, spec.at].filter(
    (value) => value !== undefined && value !== "",
  );
  if (schedules.length !== 1) {
    throw new SchedulerError(
      "cron.schedule_required",
      'Give exactly one schedule: expression (cron, e.g. "0 8 * * *"), delay (30s, 30m, 2h, 1d) or at (ISO time).',
    );
  }
  let schedule: Job["schedule"];
  let nextRunAt: number;
  if (spec.expression) {
    schedule = { kind: "cron", expression: spec.expression.trim() };
    nextRunAt = compileCron(schedule.expression, timezone).next(context.now);
  } else if (spec.delay) {
    schedule = { kind: "once" };
    nextRunAt = context.now + parseDelay(spec.delay);
  } else {
    schedule = { kind: "once" };
    nextRunAt = parseAt(spec.at ?? "", context.now, (wall) => instantOfLocalIso(wall, timezone));
  }
  const enabled = spec.enabled ?? true;
  return {
    name: spec.name?.trim() || defaultName(kind, payload),
    schedule,
    timezone,
    kind,
    payload,
    agent: spec.agent,
    toolSet: spec.toolSet,
    ...(spec.allowAfterUntrusted ? { allowAfterUntrusted: spec.allowAfterUntrusted } : {}),
    deliver: deliveryOf(spec.deliver, context.createdFrom),
    enabled,
    source: context.source,
    createdBy: context.createdBy,
    creator: context.creator ?? { identity: ownerIdentity(context.createdFrom?.channel ?? "local") },
    ...(context.createdFrom ? { createdFrom: chatOf(context.createdFrom) } : {}),
    nextRunAt: enabled ? nextRunAt : null,
    createdAt: context.now,
  };
}

/** The next run of an existing job after `after`; null for one-shot jobs (they run once). */
export function nextRunOf(job: Pick<Job, "schedule" | "timezone">, after: number): number | null {
  return job.schedule.kind === "cron" ? compileCron(job.schedule.expression, job.timezone).next(after) : null;
}

function payloadOf(spec: JobSpec): { kind: JobKind; payload: string } {
  const given = (
    [
      ["shell", spec.command],
      ["agent", spec.prompt],
      ["message", spec.message],
    ] as const
  ).filter(([, value]) => value !== undefined && value.trim() !== "");
  if (given.length !== 1) {
    throw new SchedulerError(
      "cron.payload_required",
      given.length === 0
        ? "Say what the job does: command (a shell command), prompt (an agent task) or message (fixed text)."
        : "Give only one of command, prompt or message.",
    );
  }
  const [kind, payload] = given[0]!;
  return { kind, payload: payload!.trim() };
}

function deliveryOf(deliver: JobSpec["deliver"], createdFrom: ReplyTarget | undefined): Delivery {
  const mode = deliver?.mode ?? "always";
  const pushover = deliver?.pushover ?? false;
  const ntfy = deliver?.ntfy ?? false;
  const channel = deliver?.channel ?? createdFrom?.channel;
  let chatId = deliver?.chatId;
  let threadId: string | undefined;
  if (chatId === undefined && createdFrom && channel === createdFrom.channel) {
    chatId = createdFrom.chatId;
    threadId = createdFrom.threadId;
  }
  if (deliver?.chatId !== undefined && !channel) {
    throw new SchedulerError("cron.deliver_channel_required", "deliver.chat_id needs deliver.channel too.");
  }
  if (channel && chatId === undefined) {
    throw new SchedulerError(
      "cron.deliver_chat_required",
      `deliver.channel "${channel}" needs deliver.chat_id (the chat to post the report in).`,
    );
  }
  const chat =
    channel && chatId !== undefined ? { channel, chatId, ...(threadId ? { threadId } : {}) } : undefined;
  return { ...(chat ? { chat } : {}), pushover, ...(ntfy ? { ntfy } : {}), mode };
}

/** A chat without the reply-to of the message that asked. */
function chatOf({ channel, chatId, threadId }: ReplyTarget): ReplyTarget {
  return { channel, chatId, ...(threadId ? { threadId } : {}) };
}

function defaultName(kind: JobKind, payload: string): string {
  const firstLine = payload.split("\n")[0] ?? payload;
  const short = firstLine.length > 40 ? `${firstLine.slice(0, 39)}…` : firstLine;
  return kind === "shell" ? short : `${kind}: ${short}`;
}
