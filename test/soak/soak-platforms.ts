import { DISCORD_DM_CHANNEL_ID, DISCORD_USER, type FakeDiscord } from "../fakes/discord.js";
import type { FakeSlack } from "../fakes/slack.js";
import type { FakeTelegram } from "../fakes/telegram.js";
import type { seededRandom } from "./soak-size.js";

/** A reply a platform fake accepted: `index` is its position in that fake's call log. */
export interface Delivery {
  index: number;
  chat: string;
  text: string;
}

/** One chat platform as the soak sees it: send a user message, read the delivered replies, inject faults. */
export interface SoakPlatform {
  name: "telegram" | "slack" | "discord";
  /** Length of the fake's call log (a position in time for this platform). */
  callCount(): number;
  deliveries(): Delivery[];
  /** Sends `text` from a user in `chat`; returns a check that says whether the platform saw Magpie take it. */
  send(chat: string, text: string): () => boolean;
  /** A 429 with retry-after, a 500, or a short network loss on the send path. */
  fault(random: ReturnType<typeof seededRandom>): string;
}

/** An approval prompt (DESIGN.md → Security): the owner's question, not a reply to a message. */
export const isApprovalPrompt = (text: string) => text.startsWith("Approval needed");

/**
 * The owner at the phone: presses Approve on every approval prompt the bot sends (each once; a prompt asked again
 * after a restart carries the same id, and the second press is refused as already decided). Returns how many
 * prompts it approved. A crash in the middle of a `file_append` leaves a file Magpie can't vouch for (the write
 * may or may not have landed), so a resumed turn that checks it with `file_grep` is tainted and its next append
 * asks (rule of two) — as it would ask a real owner.
 */
export function approveTelegramPrompts(telegram: FakeTelegram): {
  approved: () => number;
  prompts: () => string[];
  stop: () => void;
} {
  const pressed = new Set<string>();
  const texts: string[] = [];
  let seen = 0;
  const timer = setInterval(() => {
    for (; seen < telegram.calls.length; seen++) {
      const call = telegram.calls[seen]!;
      if (call.method !== "sendMessage" || call.failed || !isApprovalPrompt(String(call.body.text))) continue;
      const markup = call.body.reply_markup;
      const keyboard = (typeof markup === "string" ? JSON.parse(markup) : markup) as
        | { inline_keyboard?: Array<Array<{ callback_data?: string }>> }
        | undefined;
      const approve = keyboard?.inline_keyboard
        ?.flat()
        .find((button) => button.callback_data?.startsWith("approve:"))?.callback_data;
      if (!approve || pressed.has(`${call.body.chat_id} ${approve}`)) continue;
      pressed.add(`${call.body.chat_id} ${approve}`);
      texts.push(String(call.body.text));
      const chat = Number(call.body.chat_id);
      telegram.pushUpdate({
        callback_query: {
          id: `soak-approve-${seen}`,
          from: { id: chat, is_bot: false, first_name: `User${chat}` },
          chat_instance: String(chat),
          data: approve,
          message: {
            message_id: 1 + seen,
            date: Math.floor(Date.now() / 1000),
            chat: { id: chat, type: "private" },
            text: "…",
          },
        },
      });
    }
  }, 50);
  return { approved: () => pressed.size, prompts: () => texts, stop: () => clearInterval(timer) };
}

export function telegramPlatform(telegram: FakeTelegram): SoakPlatform {
  return {
    name: "telegram",
    callCount: () => telegram.calls.length,
    deliveries: () =>
      telegram.calls.flatMap((call, index) =>
        call.method === "sendMessage" && !call.failed && !isApprovalPrompt(String(call.body.text))
          ? [{ index, chat: String(call.body.chat_id), text: String(call.body.text) }]
          : [],
      ),
    send(chat, text) {
      telegram.pushMessage({
        chat: { id: Number(chat), type: "private" },
        from: { id: Number(chat), first_name: `User${chat}` },
        text,
      });
      // Updates stay queued until acknowledged by a later offset: Telegram redelivers what Magpie didn't take.
      return () => true;
    },
    fault(random) {
      const kind = random.int(0, 2);
      if (kind === 0) telegram.failNext("sendMessage", 429, "Too Many Requests: retry after 1", 1);
      else if (kind === 1) telegram.failNext("sendMessage", 500, "Internal Server Error");
      else {
        telegram.dropping = true;
        setTimeout(() => (telegram.dropping = false), random.int(100, 400));
      }
      return ["429", "500", "drop"][kind]!;
    },
  };
}

export const SLACK_SOAK_USER = "U0ALICE";
export const SLACK_SOAK_CHANNEL = "D0ALICE";

export function slackPlatform(slack: FakeSlack): SoakPlatform {
  return {
    name: "slack",
    callCount: () => slack.calls.length,
    deliveries: () =>
      slack.calls.flatMap((call, index) =>
        call.method === "chat.postMessage" && !call.failed
          ? [{ index, chat: String(call.body.channel), text: String(call.body.text) }]
          : [],
      ),
    send(_chat, text) {
      const envelope = slack.sendEnvelope(
        "events_api",
        slack.eventCallback({
          type: "message",
          channel: SLACK_SOAK_CHANNEL,
          channel_type: "im",
          user: SLACK_SOAK_USER,
          text,
          ts: slack.nextTs(),
        }),
      );
      // Slack retries an envelope that was never acknowledged; an acknowledged one is Magpie's to answer.
      return () => slack.acks.includes(envelope);
    },
    fault(random) {
      const kind = random.int(0, 1);
      if (kind === 0) slack.failNext("chat.postMessage", 429, "ratelimited", 1);
      else slack.failNext("chat.postMessage", 500, "internal_error");
      return ["429", "500"][kind]!;
    },
  };
}

export function discordPlatform(discord: FakeDiscord, takenTexts: () => Set<string>): SoakPlatform {
  return {
    name: "discord",
    callCount: () => discord.calls.length,
    deliveries: () =>
      discord.calls.flatMap((call, index) =>
        call.method === "POST" && /^\/channels\/\d+\/messages$/.test(call.path) && !call.failed
          ? [{ index, chat: DISCORD_DM_CHANNEL_ID, text: String(call.body.content) }]
          : [],
      ),
    send(_chat, text) {
      discord.sendMessage({ content: text, author: DISCORD_USER });
      // The gateway has no acknowledgement: an event on a socket that dies with the process is gone (a new
      // session is not replayed). Magpie took a message when its inbox has it.
      return () => takenTexts().has(text);
    },
    fault(random) {
      const kind = random.int(0, 1);
      const path = /^\/channels\/\d+\/messages$/;
      if (kind === 0) {
        discord.failNext(
          "POST",
          path,
          429,
          { message: "You are being rate limited.", retry_after: 0.5, global: false },
          {
            "retry-after": "1",
            "x-ratelimit-scope": "user",
          },
        );
      } else discord.failNext("POST", path, 500, { message: "500: Internal Server Error", code: 0 });
      return ["429", "500"][kind]!;
    },
  };
}
