import type { AuthorityPort } from "../core/identity.js";
import type { Approver } from "../core/tool-runtime.js";
import type { ReplyTarget } from "../core/types.js";
import type { Job } from "./job.js";
import { SchedulerError } from "./scheduler-error.js";

/**
 * DESIGN.md → Security → "Jobs carry their creator's authority": what a job may be made to do, where it may
 * report, with which tools it runs and who answers its approval requests. One rule for the tools, /cron,
 * the CLI and config jobs.
 */

type Chat = Pick<ReplyTarget, "channel" | "chatId">;

const describeChat = (chat: Chat) => `chat ${chat.chatId} on ${chat.channel}`;

/** The fix named in every refused delivery target. */
export function deliverRuleText(chat: Chat): string {
  return `only the chat a job is made in, owners' chats and the channel's configured groups (channels.${chat.channel}.groups) or owners (channels.${chat.channel}.allowFrom)`;
}

/**
 * Refuses what the creator may not schedule: anything at all for a guest, a command without `shell` among the
 * creating turn's tools, a report to a chat the `message` tool could not post to from `current`.
 */
export function assertMayCreate(
  job: Pick<Job, "kind" | "deliver" | "creator">,
  authority: AuthorityPort,
  current: Chat | null,
): void {
  const { identity, toolNames } = job.creator;
  if (identity.role === "guest") {
    throw new SchedulerError(
      "cron.guest_not_allowed",
      `Only an owner can schedule jobs, and ${identity.userName ?? identity.userId} is a guest on ${identity.channel}; nothing was scheduled.`,
    );
  }
  if (job.kind === "shell" && toolNames && !toolNames.includes("shell")) {
    throw new SchedulerError(
      "cron.tool_not_allowed",
      `A command job runs shell, and this turn has no shell tool (its tools: ${toolNames.join(", ") || "none"}); nothing was scheduled. Use prompt or message instead, or ask the owner to add it with /cron add.`,
    );
  }
  const chat = job.deliver.chat;
  if (chat && !authority.mayDeliver(current, chat)) {
    throw new SchedulerError(
      "cron.deliver_not_allowed",
      `${describeChat(chat)} is not one Magpie may post to: ${deliverRuleText(chat)}; nothing was scheduled.`,
    );
  }
}

/**
 * Checked again when a report goes out, so an allowlist change between creation and run takes effect. The
 * creating chat has no standing of its own here: it must still be an owner's chat or an allowed group.
 */
export function mayDeliverNow(authority: AuthorityPort, chat: Chat): boolean {
  return authority.mayDeliver(null, chat);
}

/** Why a job may not run at all any more (null when it may). */
export function runRefusal(job: Job): string | null {
  const { identity, toolNames } = job.creator;
  if (identity.role === "guest") {
    return `Refused (cron.guest_not_allowed): job #${job.id} was made by a guest (${identity.userId} on ${identity.channel}); it does not run.`;
  }
  if (job.kind === "shell" && toolNames && !toolNames.includes("shell")) {
    return `Refused (cron.tool_not_allowed): job #${job.id} runs a command, and the turn that made it had no shell tool.`;
  }
  return null;
}

/**
 * The tools a prompt job's turn gets: the job's own tool set (default `default`), narrowed to the tools the
 * creating turn had when those are recorded.
 */
export function promptJobToolSet(
  job: Pick<Job, "toolSet" | "creator">,
  resolveToolSet: (toolSet: string | string[]) => string[],
): string | string[] {
  const own = job.toolSet ?? "default";
  const creatorTools = job.creator.toolNames;
  if (!creatorTools) return own;
  const allowed = new Set(creatorTools);
  return resolveToolSet(own).filter((name) => allowed.has(name));
}

/**
 * Who answers a job's approval requests, and where: its creator, in the chat the job was made from. A config
 * or CLI job has no such chat; the owner's chosen report chat serves, if it has one. Never a chat Magpie
 * may not post to (then there is no one to ask and what needs asking is refused).
 */
export function jobApprover(job: Job, authority: AuthorityPort): Approver | undefined {
  const chat = job.createdFrom ?? (job.source === "chat" ? undefined : job.deliver.chat);
  if (!chat || !authority.mayDeliver(null, chat)) return undefined;
  const { channel, chatId, threadId } = chat;
  return { target: { channel, chatId, ...(threadId ? { threadId } : {}) }, identity: job.creator.identity };
}
