import type { AuthorityPort } from "../core/identity.js";
import type { ReplyTarget } from "../core/types.js";
import { authorityRefusal, deliverRuleText, SHELL_TOOL } from "./action-runner.js";
import type { Job } from "./job.js";
import { SchedulerError } from "./scheduler-error.js";

/**
 * DESIGN.md → Security → "Jobs carry their creator's authority": what a job may be made to do, where it may
 * report, with which tools it runs and who answers its approval requests. One rule for the tools, /cron,
 * the CLI and config jobs.
 */

type Chat = Pick<ReplyTarget, "channel" | "chatId">;

const describeChat = (chat: Chat) => `chat ${chat.chatId} on ${chat.channel}`;

/**
 * Refuses what the creator may not schedule: anything at all for a guest, a command without `shell` among the
 * creating turn's tools, a report to a chat the `message` tool could not post to from `current`.
 */
export function assertMayCreate(
  job: Pick<Job, "kind" | "deliver" | "creator">,
  authority: AuthorityPort,
  current: Chat | null,
): void {
  const { identity } = job.creator;
  const refusal = authorityRefusal(job.creator, job.kind === "shell" ? [SHELL_TOOL] : []);
  if (refusal?.rule === "guest_not_allowed") {
    throw new SchedulerError(
      "cron.guest_not_allowed",
      `Only an owner can schedule jobs, and ${identity.userName ?? identity.userId} is a guest on ${identity.channel}; nothing was scheduled.`,
    );
  }
  if (refusal) {
    throw new SchedulerError(
      "cron.tool_not_allowed",
      `A command job runs shell, and this turn has no shell tool (its tools: ${refusal.tools}); nothing was scheduled. Use prompt or message instead, or ask the owner to add it with /cron add.`,
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
