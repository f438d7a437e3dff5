import { parseArgs } from "node:util";
import type { InboxItem } from "../../store/inbox.js";
import type { Store } from "../../store/index.js";
import { type MessageTrace, type RefusedMessage, TraceRepository, traceOf } from "../../store/trace.js";
import type { CliCommand } from "../cli-env.js";

const USAGE = `Usage: magpie trace <message> [--json]
       magpie trace --chat <channel>:<chatId> [--limit <n>] [--json]
  <message>        an inbox id, <channel>:<chatId>:<messageId>, or last
  --chat           the chat's recent messages (refused ones too), newest first
  --limit <n>      how many with --chat (default 20)
  --json           the trace as JSON`;

/**
 * `magpie trace`: a message's life from the database alone (DESIGN.md → CLI) — received, access verdict, queued,
 * its turns (each LLM call and tool call), the outbox parts with the platform's ids or why not, the outcome.
 */
export const run: CliCommand = async (argv, env) => {
  let values: { chat?: string; limit?: string; json?: boolean; help?: boolean };
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: argv,
      options: {
        chat: { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
    values = parsed.values;
    positionals = parsed.positionals;
  } catch (error) {
    env.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    env.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const limit = values.limit === undefined ? 20 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1)
    return usage(env, `--limit: "${values.limit}" is not a positive number.`);
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
          `${JSON.stringify({ messages: messages.map((item) => summaryOf(item)), refused }, null, 2)}\n`,
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
        if (values.json) env.stdout.write(`${JSON.stringify({ refused: refusal }, null, 2)}\n`);
        else env.stdout.write(refusedText(refusal, time));
        return 0;
      }
      env.stderr.write(`No message "${query}" in ${config.dataDir} (pruned, never received, or a typo).\n`);
      return 1;
    }
    const result = traceOf(trace, item);
    if (values.json) env.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else env.stdout.write(traceText(result, time));
    return 0;
  } finally {
    store.close();
  }
};

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

type TimeFormat = (at: number) => string;

function timeFormat(timeZone: string): TimeFormat {
  const format = new Intl.DateTimeFormat("en-CA", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    fractionalSecondDigits: 3,
    hourCycle: "h23",
  });
  return (at) => format.format(new Date(at)).replace(",", "");
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

/** One line, cut to `max` characters, for a message's text. */
function excerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const ms = (value: number) =>
  value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;

/** The trace as text, one event a line. */
export function traceText(trace: MessageTrace, time: TimeFormat): string {
  const lines: string[] = [];
  lines.push(
    `Message ${trace.inboxId} · ${trace.channel}:${trace.chatId}:${trace.messageId} · from ${trace.userId} · session ${trace.sessionKey}`,
  );
  lines.push(`  "${excerpt(trace.text, 100)}" (${trace.text.length} chars)`);
  lines.push(`${time(trace.receivedAt)}  received`);
  lines.push(
    `${" ".repeat(23)}  access: ${trace.access ? `${trace.access.verdict}${trace.access.reason ? ` (${trace.access.reason})` : ""}` : "allowed (no verdict recorded)"}`,
  );
  if (trace.startedAt !== null)
    lines.push(`${time(trace.startedAt)}  started (queued ${ms(trace.startedAt - trace.receivedAt)})`);
  for (const turn of trace.turns) {
    const state = turn.status
      ? `${turn.status}${turn.errorCode ? ` (${turn.errorCode})` : ""} in ${ms(turn.durationMs ?? 0)}`
      : "did not finish";
    lines.push(
      `${time(turn.startedAt)}  turn ${turn.turnId} · ${turn.origin} · agent ${turn.agent} · ${state}`,
    );
    for (const step of turn.steps) {
      if (step.type === "llm") {
        const tokens = `${step.promptTokens}+${step.completionTokens} tokens${step.estimated ? " (estimated)" : ""}`;
        const cost = step.costUsd !== null ? ` · $${step.costUsd.toFixed(6)}` : "";
        const result = step.result === "ok" ? "ok" : `failed (${step.errorCode ?? "error"})`;
        lines.push(
          `${time(step.at)}    llm ${step.kind} ${step.model}${step.fallback ? " (fallback)" : ""} · ${tokens}${cost} · ${ms(step.latencyMs)} · ${result}`,
        );
      } else {
        const result = step.ok ? "ok" : `failed (${step.errorCode ?? "error"})`;
        lines.push(
          `${time(step.at)}    tool ${step.tool} · verdict ${step.verdict} · ${ms(step.durationMs)} · ${result}`,
        );
      }
    }
  }
  for (const delivery of trace.deliveries) {
    const ids =
      delivery.platformMessageIds.length > 0
        ? ` · platform ids ${delivery.platformMessageIds.join(", ")}`
        : "";
    const why = delivery.status !== "sent" && delivery.lastError ? ` · ${delivery.lastError}` : "";
    lines.push(
      `${time(delivery.sentAt ?? delivery.createdAt)}  outbox ${delivery.outboxId} (${delivery.origin}) · ${delivery.status} after ${delivery.attempts} attempt(s) · ${delivery.parts} part(s)${ids}${why}`,
    );
    lines.push(`${" ".repeat(23)}    "${excerpt(delivery.text, 100)}"`);
  }
  if (trace.deliveries.length === 0) lines.push(`${" ".repeat(23)}  outbox: nothing queued for it`);
  const finished = trace.finishedAt !== null ? time(trace.finishedAt) : " ".repeat(23);
  lines.push(
    `${finished}  outcome: ${trace.outcome ?? `none yet (${trace.status})`}${trace.cause ? ` — ${trace.cause}` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}

function refusedText(refusal: RefusedMessage, time: TimeFormat): string {
  return `Message ${refusal.channel}:${refusal.chatId}:${refusal.messageId} · from ${refusal.userId}\n${time(refusal.at)}  received\n${" ".repeat(23)}  access: ${refusal.verdict}${refusal.reason ? ` (${refusal.reason})` : ""} — not stored; nothing sent${refusal.verdict === "pairing" ? " but the pairing code" : ""}\n${" ".repeat(23)}  outcome: refused\n`;
}

function chatText(messages: InboxItem[], refused: RefusedMessage[], time: TimeFormat): string {
  const rows = [
    ...messages.map((item) => ({
      at: item.receivedAt,
      line: `${time(item.receivedAt)}  #${item.id}  ${(item.outcome ?? item.status).padEnd(13)}  ${excerpt(item.message.text, 60)}${item.outcomeCause ? `  (${item.outcomeCause})` : ""}`,
    })),
    ...refused.map((refusal) => ({
      at: refusal.at,
      line: `${time(refusal.at)}  ${refusal.messageId}  ${"refused".padEnd(13)}  from ${refusal.userId}${refusal.reason ? ` (${refusal.reason})` : ""}`,
    })),
  ].sort((a, b) => b.at - a.at);
  if (rows.length === 0) return "No messages from that chat.\n";
  return `${rows.map((row) => row.line).join("\n")}\n`;
}
