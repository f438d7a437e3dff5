import { z } from "zod";
import type { Job, RunStatus, RunTrigger } from "./job.js";

export interface RunOutcome {
  status: RunStatus;
  /** Readable output: shell stdout/stderr, the agent's answer, the message text or the error. */
  output: string;
  trigger: RunTrigger;
  scheduledAt: number | null;
  durationMs: number;
}

const STATUS_LABEL: Record<RunStatus, string> = {
  ok: "✅ ok",
  error: "❌ failed",
  timeout: "⏱️ timed out",
  skipped: "⏭️ skipped",
  missed: "⚠️ missed",
  running: "running",
};

/** The chat report for a run, trimmed to fit one message of the channel (`maxLength` characters). */
export function formatChatReport(job: Job, outcome: RunOutcome, maxLength: number): string {
  // A reminder (message job) arrives as itself; everything else gets a header saying which job ran.
  if (job.kind === "message" && outcome.status === "ok") return trimHead(outcome.output, maxLength);
  // A missed slot never ran: no duration, and its output says which slots and why.
  const took = outcome.status === "missed" ? "" : ` in ${formatDuration(outcome.durationMs)}`;
  const header = `**⏰ ${job.name}** (#${job.id}) — ${STATUS_LABEL[outcome.status]}${took}${caughtUpNote(outcome, job.timezone)}`;
  const room = Math.max(100, maxLength - header.length - 20);
  if (!outcome.output.trim()) return header;
  if (job.kind === "shell") return `${header}\n\`\`\`\n${trimTail(outcome.output, room - 8)}\n\`\`\``;
  return `${header}\n\n${trimHead(outcome.output, room)}`;
}

/** The Pushover text for a run: plain, short (Pushover allows 1024 characters). */
export function formatPushoverReport(job: Job, outcome: RunOutcome): { title: string; message: string } {
  const plain = outcome.output.replace(/```[a-z]*\n?/g, "").trim();
  const body =
    job.kind === "shell" ? trimTail(plain, 900) : trimHead(plain || STATUS_LABEL[outcome.status], 900);
  return {
    title: `${job.name} — ${STATUS_LABEL[outcome.status]}`,
    message: `${body || STATUS_LABEL[outcome.status]}${caughtUpNote(outcome, job.timezone)}`,
  };
}

/**
 * A shell tool result as far as a report reads it: any object (a field of an unexpected type reads as absent,
 * as before: the fields are caught one by one so a bad one never hides the others).
 */
const field = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
const shellResultSchema = z.object({
  ok: z.unknown().optional(),
  error: field(z.object({ code: field(z.string()), message: field(z.string()) })),
  exit_code: field(z.number()),
  stdout: field(z.string()),
  stderr: field(z.string()),
  signal: field(z.string()),
});

/** Shell tool results are JSON ({exit_code, stdout, stderr}); renders them as terminal-like text. */
export function shellOutputText(result: string): { ok: boolean; text: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(result.replace(/^(Warning: .*\n)+/, ""));
  } catch {
    return { ok: true, text: result };
  }
  // An array reads as an object with none of the fields (as it always did).
  const shape = shellResultSchema.safeParse(Array.isArray(parsed) ? {} : parsed);
  if (!shape.success) return { ok: true, text: result };
  const record = shape.data;
  if (record.ok === false) {
    const error = record.error ?? {};
    return { ok: false, text: `${error.code ?? "error"}: ${error.message ?? result}` };
  }
  const exitCode = record.exit_code ?? null;
  const stdout = record.stdout?.trimEnd() ?? "";
  const stderr = record.stderr?.trimEnd() ?? "";
  const parts = [stdout, stderr ? `[stderr]\n${stderr}` : ""].filter(Boolean);
  if (exitCode !== null && exitCode !== 0) parts.push(`[exit code ${exitCode}]`);
  if (record.signal !== undefined) parts.push(`[killed by ${record.signal}]`);
  return { ok: exitCode === 0 || (exitCode === null && !record.signal), text: parts.join("\n") };
}

function caughtUpNote(outcome: RunOutcome, timeZone: string): string {
  if (outcome.trigger !== "catch_up" || outcome.scheduledAt === null || outcome.status === "missed")
    return "";
  const due = new Date(outcome.scheduledAt).toLocaleString("en-GB", {
    timeZone,
    dateStyle: "short",
    timeStyle: "short",
  });
  return ` — caught up (missed at ${due} while Magpie was down)`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function trimHead(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 14)}\n…(truncated)`;
}

/** Keeps the end: the last lines of command output matter most. */
function trimTail(text: string, limit: number): string {
  return text.length <= limit ? text : `…(truncated)\n${text.slice(text.length - (limit - 14))}`;
}
