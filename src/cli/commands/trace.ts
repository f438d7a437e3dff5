import type { InboxItem } from "../../store/inbox.js";
import type { Store } from "../../store/index.js";
import { refusedTraceOf, TraceRepository, traceOf } from "../../store/trace.js";
import { chatText, deliveryLines, refusedText, timeFormat, traceText } from "../../store/trace-text.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";
import { jsonText } from "../terminal-output.js";

const USAGE = `Usage: magpie trace <message> [--json]
       magpie trace --chat <channel>:<chatId> [--limit <n>] [--json]
       magpie trace outbox <id> [--json]
  <message>        an inbox id, <channel>:<chatId>:<messageId>, or last
  outbox <id>      one outbox item (a job report, trigger delivery or alert): its fate and failover path
  --chat           the chat's recent messages (refused ones too), newest first
  --limit <n>      how many with --chat (default 20)
  --json           the trace as JSON`;

/**
 * `magpie trace`: a message's life from the database alone (DESIGN.md → CLI) — received, access verdict, queued,
 * its turns (each LLM call and tool call), the outbox parts with the platform's ids or why not, the outcome.
 */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(
    argv,
    env,
    USAGE,
    { chat: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } },
    { positionals: true },
  );
  if (typeof parsed === "number") return parsed;
  const { values, positionals } = parsed;
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1)
    return usage(env, `--limit: "${values.limit}" is not a positive number.`);
  const outboxId = positionals[0] === "outbox" && positionals.length === 2 ? Number(positionals[1]) : null;
  if (outboxId !== null) return traceOutbox(env, outboxId, values.json === true);
  if (values.chat === undefined && positionals.length !== 1)
    return usage(env, positionals.length === 0 ? "Which message? Give one." : "Give one message.");
  if (values.chat !== undefined && positionals.length > 0)
    return usage(env, "Give either a message or --chat, not both.");
  const chat = values.chat !== undefined ? splitChat(values.chat) : null;
  if (values.chat !== undefined && !chat)
    return usage(env, `--chat: "${values.chat}" is not <channel>:<chatId>.`);

  const config = env.loadConfig();
  const store = env.openStore(config);
  try {
    const trace = new TraceRepository(store.db);
    const time = timeFormat(config.timezone);
    if (chat) {
      const messages = store.inbox.recent(limit, chat);
      const refused = trace.refused(limit, chat);
      if (values.json) {
        env.stdout.write(
          `${jsonText(
            {
              messages: messages.map((item) => summaryOf(item)),
              refused: refused.map((refusal) => ({ ...refusal, outcome: "refused" })),
            },
            2,
          )}\n`,
        );
      } else env.stdout.write(chatText(messages, refused, time));
      return 0;
    }
    const query = positionals[0]!;
    const item = find(store, query);
    if (!item) {
      const parts = splitMessage(query);
      const refusal = parts ? trace.accessOf(parts.channel, parts.chatId, parts.messageId) : undefined;
      if (refusal && refusal.verdict !== "allowed") {
        if (values.json) env.stdout.write(`${jsonText(refusedTraceOf(refusal), 2)}\n`);
        else env.stdout.write(refusedText(refusal, time));
        return 0;
      }
      env.stderr.write(`No message "${query}" in ${config.dataDir} (pruned, never received, or a typo).\n`);
      return 1;
    }
    const result = traceOf(trace, item);
    if (values.json) env.stdout.write(`${jsonText(result, 2)}\n`);
    else env.stdout.write(traceText(result, time));
    return 0;
  } finally {
    store.close();
  }
};

/** `magpie trace outbox <id>`: the id a failover message names ("Trace: outbox <id>"). */
function traceOutbox(env: Parameters<CliCommand>[1], outboxId: number, json: boolean): number {
  if (!Number.isInteger(outboxId) || outboxId < 1) return usage(env, "outbox: give the item's number.");
  const config = env.loadConfig();
  const store = env.openStore(config);
  try {
    const delivery = new TraceRepository(store.db).outboxItem(outboxId);
    if (!delivery) {
      env.stderr.write(`No outbox item ${outboxId} in ${config.dataDir} (pruned or a typo).\n`);
      return 1;
    }
    if (json) env.stdout.write(`${jsonText(delivery, 2)}\n`);
    else env.stdout.write(`${deliveryLines(delivery, timeFormat(config.timezone)).join("\n")}\n`);
    return 0;
  } finally {
    store.close();
  }
}

function usage(env: Parameters<CliCommand>[1], problem: string): number {
  env.stderr.write(`${problem}\n${USAGE}\n`);
  return 2;
}

function find(store: Store, query: string): InboxItem | undefined {
  if (query === "last") return store.inbox.recent(50).find((item) => !item.message.note);
  if (/^\d+$/.test(query)) return store.inbox.get(Number(query));
  const parts = splitMessage(query);
  return parts ? store.inbox.findByMessage(parts.channel, parts.chatId, parts.messageId) : undefined;
}

/** `<channel>:<chatId>:<messageId>`: the message id is the last part (chat ids may hold a colon, e.g. a thread). */
function splitMessage(query: string): { channel: string; chatId: string; messageId: string } | null {
  const first = query.indexOf(":");
  const last = query.lastIndexOf(":");
  if (first <= 0 || last <= first + 1 || last === query.length - 1) return null;
  return {
    channel: query.slice(0, first),
    chatId: query.slice(first + 1, last),
    messageId: query.slice(last + 1),
  };
}

function splitChat(value: string): { channel: string; chatId: string } | null {
  const first = value.indexOf(":");
  if (first <= 0 || first === value.length - 1) return null;
  return { channel: value.slice(0, first), chatId: value.slice(first + 1) };
}

function summaryOf(item: InboxItem) {
  return {
    inboxId: item.id,
    messageId: item.message.messageId,
    receivedAt: item.receivedAt,
    status: item.status,
    outcome: item.outcome,
    cause: item.outcomeCause,
    text: item.message.text.slice(0, 80),
  };
}
