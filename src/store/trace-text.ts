import type { InboxItem } from "./inbox.js";
import type { MessageTrace, RefusedMessage, TracedDelivery } from "./trace.js";

/** Formats an instant for a trace line. */
export type TimeFormat = (at: number) => string;

/** Instants as `YYYY-MM-DD HH:MM:SS.mmm` in the configured time zone. */
export function timeFormat(timeZone: string): TimeFormat {
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

/** One line, cut to `max` characters, for a message's text. */
function excerpt(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

const ms = (value: number) =>
  value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;

/** Ids unique per chat only are kept as `<chatId>:<id>` (Telegram): shown as the platform's own id. */
function platformId(chatId: string, messageId: string): string {
  return messageId.startsWith(`${chatId}:`) ? messageId.slice(chatId.length + 1) : messageId;
}

/** The trace as text, one event a line. */
export function traceText(trace: MessageTrace, time: TimeFormat): string {
  const lines: string[] = [];
  const messageId = platformId(trace.chatId, trace.messageId);
  lines.push(
    `Message ${trace.inboxId} · ${trace.channel}:${trace.chatId}:${messageId} · from ${trace.userId} · session ${trace.sessionKey}`,
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
        // The rule of two's sources (DESIGN → Security → Untrusted content): what the turn had read by then.
        if (step.untrusted) lines.push(`${" ".repeat(23)}      untrusted: ${step.untrusted}`);
      }
    }
  }
  for (const delivery of trace.deliveries) lines.push(...deliveryLines(delivery, time));
  if (trace.deliveries.length === 0) lines.push(`${" ".repeat(23)}  outbox: nothing queued for it`);
  const finished = trace.finishedAt !== null ? time(trace.finishedAt) : " ".repeat(23);
  lines.push(
    `${finished}  outcome: ${trace.outcome ?? `none yet (${trace.status})`}${trace.cause ? ` — ${trace.cause}` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}

/** A refused message's trace: its metadata and verdict (its text was never kept). */
export function refusedText(refusal: RefusedMessage, time: TimeFormat): string {
  return `Message ${refusal.channel}:${refusal.chatId}:${platformId(refusal.chatId, refusal.messageId)} · from ${refusal.userId}\n${time(refusal.at)}  received\n${" ".repeat(23)}  access: ${refusal.verdict}${refusal.reason ? ` (${refusal.reason})` : ""} — not stored; nothing sent${refusal.verdict === "pairing" ? " but the pairing code" : ""}\n${" ".repeat(23)}  outcome: refused\n`;
}

/** A chat's recent messages and refusals, one a line, newest first. */
export function chatText(messages: InboxItem[], refused: RefusedMessage[], time: TimeFormat): string {
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

/** What delivery failover did with an undeliverable item, as `magpie trace` and the dashboard say it. */
export function failoverText(failover: NonNullable<TracedDelivery["failover"]>): string {
  if (failover.already && failover.path)
    return `already delivered via ${failover.path} by its own delivery (failover sent nothing)`;
  return failover.path
    ? `delivered via ${failover.path} (failover)`
    : `failover found no path (tried ${failover.tried.join(", ") || "none"})`;
}

/** An outbox item's lines: status, attempts, platform ids or why not, the failover path, the text's start. */
export function deliveryLines(delivery: TracedDelivery, time: TimeFormat): string[] {
  const lines: string[] = [];
  const ids =
    delivery.platformMessageIds.length > 0 ? ` · platform ids ${delivery.platformMessageIds.join(", ")}` : "";
  const why = delivery.status !== "sent" && delivery.lastError ? ` · ${delivery.lastError}` : "";
  const via = delivery.failover ? ` · ${failoverText(delivery.failover)}` : "";
  lines.push(
    `${time(delivery.sentAt ?? delivery.createdAt)}  outbox ${delivery.outboxId} (${delivery.origin}) · ${delivery.status} after ${delivery.attempts} attempt(s) · ${delivery.parts} part(s)${ids}${why}${via}`,
  );
  lines.push(`${" ".repeat(23)}    "${excerpt(delivery.text, 100)}"`);
  return lines;
}
