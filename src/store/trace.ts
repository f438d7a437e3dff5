import type Database from "better-sqlite3";
import { z } from "zod";
import { parseJson } from "../lib/parse-json.js";
import { row as rowOf } from "../lib/row.js";
import { atomic } from "./atomic.js";
import type { Db } from "./database.js";
import type { InboxItem } from "./inbox.js";
import type { MessageOutcome } from "./message-records.js";

/** What a trace row records (from the core's events). */
const traceKindSchema = z.enum([
  "access",
  "received",
  "turn_started",
  "turn_finished",
  "llm",
  "tool",
  "delivery",
  "failover",
  "outcome",
]);
export type TraceKind = z.infer<typeof traceKindSchema>;

export interface TraceRow {
  at: number;
  kind: TraceKind;
  inboxId?: number | null;
  turnId?: string | null;
  outboxId?: number | null;
  channel?: string | null;
  chatId?: string | null;
  messageId?: string | null;
  data: Record<string, unknown>;
}

const storedRows = rowOf(
  z.object({
    id: z.number(),
    at: z.number(),
    kind: traceKindSchema,
    inbox_id: z.number().nullable(),
    turn_id: z.string().nullable(),
    outbox_id: z.number().nullable(),
    channel: z.string().nullable(),
    chat_id: z.string().nullable(),
    message_id: z.string().nullable(),
    data: z.string(),
  }),
  "trace_events",
);

type StoredRow = NonNullable<ReturnType<typeof storedRows.one>>;

const turnIdValues = rowOf(z.string(), "trace turn id");

const deliveryRows = rowOf(
  z.object({
    id: z.number(),
    origin: z.string(),
    status: z.string(),
    attempts: z.number(),
    parts_sent: z.number(),
    platform_message_ids: z.string(),
    last_error: z.string().nullable(),
    created_at: z.number(),
    sent_at: z.number().nullable(),
    payload: z.string(),
  }),
  "outbox",
);

/** What trace rows keep as JSON: any object (each kind reads its own fields, with defaults). */
const traceData = z.record(z.string(), z.unknown());
const accessData = z.looseObject({
  userId: z.string().optional(),
  verdict: z.string().optional(),
  reason: z.string().optional(),
});
const payloadText = z.looseObject({ text: z.string().optional() });
const failoverRows = rowOf(z.object({ data: z.string() }), "trace_events failover");
const failoverData = z.looseObject({ path: z.unknown(), tried: z.unknown(), already: z.string().optional() });

/** A refused message as trace keeps it: metadata only, never its text. */
export interface RefusedMessage {
  at: number;
  channel: string;
  chatId: string;
  messageId: string;
  userId: string;
  verdict: string;
  reason: string | null;
}

/**
 * Rows recorded and not yet written, per database connection: every `TraceRepository` on one connection shares
 * them, so a read through any of them sees what was recorded before it.
 */
interface PendingRows {
  /** Each row's column values, taken when it was recorded. */
  rows: unknown[][];
  scheduled: boolean;
  onError?: (error: unknown) => void;
  /** Writes the queued rows (the first repository's `flush` on this connection). */
  flush?: () => void;
}
const pendingRows = new WeakMap<Db, PendingRows>();

/**
 * The `trace_events` table: what `magpie trace` knows beyond the inbox, outbox, audit and ledger.
 *
 * Rows are written in one transaction per turn of the event loop, after the code that recorded them has run (issue
 * 35, hot path): a message's arrival records its access verdict, its receipt and its turn's start one after
 * another, and each row in a transaction of its own was a WAL commit on the way from the message to its LLM
 * request. `record` queues the row; `flush` (run by `setImmediate`, by `recordNow` for a row that closes
 * something, before every read here, and when the trace feature stops) writes what is queued. The trace explains; it is not the record of what was done (the inbox,
 * outbox and audit are, written at once): a crash loses at most the rows of the loop turn it cut short.
 */
export class TraceRepository {
  private readonly insertRow: Database.Statement;
  private readonly pending: PendingRows;

  /** `onError`: told when a queued write fails (it runs later, from the event loop, with no caller to throw to). */
  constructor(
    private readonly db: Db,
    onError?: (error: unknown) => void,
  ) {
    this.insertRow = db.prepare(
      `INSERT INTO trace_events (at, kind, inbox_id, turn_id, outbox_id, channel, chat_id, message_id, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    let pending = pendingRows.get(db);
    if (!pending) {
      pending = { rows: [], scheduled: false };
      pendingRows.set(db, pending);
    }
    if (onError) pending.onError = onError;
    pending.flush ??= () => this.flush();
    this.pending = pending;
  }

  /** Queues a row; it is written with the others of this turn of the event loop (see the class). */
  record(row: TraceRow): void {
    this.pending.rows.push([
      row.at,
      row.kind,
      row.inboxId ?? null,
      row.turnId ?? null,
      row.outboxId ?? null,
      row.channel ?? null,
      row.chatId ?? null,
      row.messageId ?? null,
      JSON.stringify(row.data),
    ]);
    if (this.pending.scheduled) return;
    this.pending.scheduled = true;
    setImmediate(() => {
      try {
        this.flush();
      } catch (error) {
        if (this.pending.onError) this.pending.onError(error);
        else throw error;
      }
    });
  }

  /**
   * Records a row and writes it with every row queued before it, now: for the rows that close something (a turn's
   * end, a delivery, an outcome), so whoever learns of that from the inbox or outbox finds its trace complete.
   */
  recordNow(row: TraceRow): void {
    this.record(row);
    this.flush();
  }

  /** Writes every queued row in one transaction (nothing when none is queued or the database is closed). */
  flush(): void {
    const { pending } = this;
    pending.scheduled = false;
    if (pending.rows.length === 0 || !this.db.open) return;
    const rows = pending.rows.splice(0);
    atomic(this.db, () => {
      for (const values of rows) this.insertRow.run(...values);
    });
  }

  /** The access verdict recorded for a platform message (the newest), by its id as `findByMessage` takes it. */
  accessOf(channel: string, chatId: string, messageId: string): RefusedMessage | undefined {
    this.flush();
    const row = this.db
      .prepare(
        "SELECT * FROM trace_events WHERE kind = 'access' AND channel = ? AND chat_id = ? AND message_id IN (?, ?) ORDER BY id DESC LIMIT 1",
      )
      .get(channel, chatId, messageId, `${chatId}:${messageId}`);
    const found = storedRows.one(row);
    return found ? toRefused(found) : undefined;
  }

  /** Refused messages, newest first; of one chat when given. */
  refused(limit: number, chat?: { channel: string; chatId: string }): RefusedMessage[] {
    this.flush();
    const rows = storedRows.all(
      chat
        ? this.db
            .prepare(
              "SELECT * FROM trace_events WHERE kind = 'access' AND channel = ? AND chat_id = ? AND json_extract(data, '$.verdict') != 'allowed' ORDER BY id DESC LIMIT ?",
            )
            .all(chat.channel, chat.chatId, limit)
        : this.db
            .prepare(
              "SELECT * FROM trace_events WHERE kind = 'access' AND json_extract(data, '$.verdict') != 'allowed' ORDER BY id DESC LIMIT ?",
            )
            .all(limit),
    );
    return rows.map(toRefused);
  }

  /** The turn ids that answered an inbox message. */
  turnsOf(inboxId: number): string[] {
    this.flush();
    return turnIdValues.all(
      this.db
        .prepare(
          "SELECT DISTINCT turn_id FROM trace_events WHERE kind = 'turn_started' AND inbox_id = ? AND turn_id IS NOT NULL",
        )
        .pluck()
        .all(inboxId),
    );
  }

  /** Every row of these turns (delegations, spawned tasks and follow-ups share their cause's id), in order. */
  rowsOfTurns(turnIds: string[]): Array<TraceRow & { id: number }> {
    this.flush();
    if (turnIds.length === 0) return [];
    const rows = storedRows.all(
      this.db
        .prepare(
          `SELECT * FROM trace_events WHERE turn_id IN (${turnIds.map(() => "?").join(", ")}) ORDER BY at, id`,
        )
        .all(...turnIds),
    );
    return rows.map(toRow);
  }

  /** The outbox items that answer an inbox message, in order. */
  outboxOf(inboxId: number): TracedDelivery[] {
    this.flush();
    return this.tracedDeliveries(
      deliveryRows.all(this.db.prepare("SELECT * FROM outbox WHERE inbox_id = ? ORDER BY id").all(inboxId)),
    );
  }

  /** One outbox item by id — a job report, trigger delivery or alert has no inbound message — with its failover. */
  outboxItem(outboxId: number): TracedDelivery | undefined {
    this.flush();
    const found = deliveryRows.one(this.db.prepare("SELECT * FROM outbox WHERE id = ?").get(outboxId));
    return found ? this.tracedDeliveries([found])[0] : undefined;
  }

  private tracedDeliveries(rows: ReturnType<typeof deliveryRows.all>): TracedDelivery[] {
    const failover = this.db.prepare(
      "SELECT data FROM trace_events WHERE kind = 'failover' AND outbox_id = ? ORDER BY id DESC LIMIT 1",
    );
    return rows.map((row) => ({
      ...failoverOf(failoverRows.one(failover.get(row.id))),
      outboxId: row.id,
      origin: row.origin,
      status: row.status,
      attempts: row.attempts,
      parts: row.parts_sent,
      platformMessageIds: parseJson(
        row.platform_message_ids,
        z.array(z.string()),
        "outbox message ids",
      ).filter(Boolean),
      lastError: row.last_error,
      createdAt: row.created_at,
      sentAt: row.sent_at,
      text: parseJson(row.payload, payloadText, "outbox payload").text ?? "",
    }));
  }

  /** An inbox message's own rows (received, deliveries, outcomes). */
  rowsOfInbox(inboxId: number): Array<TraceRow & { id: number }> {
    this.flush();
    const rows = storedRows.all(
      this.db.prepare("SELECT * FROM trace_events WHERE inbox_id = ? ORDER BY at, id").all(inboxId),
    );
    return rows.map(toRow);
  }
}

/**
 * Writes the trace rows queued on this connection now, inside the caller's transaction when there is one (issue 35,
 * hot path): a step journal's row goes in one transaction with the trace rows of its step, instead of those rows
 * taking a commit of their own a moment later. A failed write is reported like a queued one (`onError`) and does
 * not fail the caller: the trace explains, it is not the record. Nothing when no trace is set up on `db`.
 */
export function flushQueuedTrace(db: Db): void {
  const pending = pendingRows.get(db);
  if (!pending?.flush || pending.rows.length === 0) return;
  try {
    pending.flush();
  } catch (error) {
    if (!pending.onError) throw error;
    pending.onError(error);
  }
}

/** A `failover` trace row's data as the trace shows it (written by notify/delivery-failover.ts). */
function failoverOf(row: { data: string } | undefined): Pick<TracedDelivery, "failover"> {
  if (!row) return {};
  const data = parseJson(row.data, failoverData, "trace failover data");
  const tried = Array.isArray(data.tried) ? data.tried.map(String) : [];
  return {
    failover: {
      path: typeof data.path === "string" ? data.path : null,
      tried,
      ...(typeof data.already === "string" ? { already: true } : {}),
    },
  };
}

function toRow(row: StoredRow): TraceRow & { id: number } {
  return {
    id: row.id,
    at: row.at,
    kind: row.kind,
    inboxId: row.inbox_id,
    turnId: row.turn_id,
    outboxId: row.outbox_id,
    channel: row.channel,
    chatId: row.chat_id,
    messageId: row.message_id,
    data: parseJson(row.data, traceData, "trace data"),
  };
}

function toRefused(row: StoredRow): RefusedMessage {
  const data = parseJson(row.data, accessData, "trace access data");
  return {
    at: row.at,
    channel: row.channel ?? "",
    chatId: row.chat_id ?? "",
    messageId: row.message_id ?? "",
    userId: data.userId ?? "",
    verdict: data.verdict ?? "refused",
    reason: data.reason ?? null,
  };
}

/** One turn in a message's trace. */
export interface TracedTurn {
  turnId: string;
  origin: string;
  agent: string;
  startedAt: number;
  finishedAt: number | null;
  status: string | null;
  errorCode: string | null;
  durationMs: number | null;
  iterations: number | null;
  /** LLM and tool calls in order. */
  steps: TracedStep[];
}

export type TracedStep =
  | {
      type: "llm";
      at: number;
      kind: string;
      model: string;
      result: string;
      promptTokens: number;
      completionTokens: number;
      estimated: boolean;
      costUsd: number | null;
      latencyMs: number;
      fallback: boolean;
      errorCode: string | null;
    }
  | {
      type: "tool";
      at: number;
      tool: string;
      verdict: string;
      ok: boolean;
      errorCode: string | null;
      durationMs: number;
      /** The untrusted content the turn held when the call ran ("after reading https://…"), or null. */
      untrusted: string | null;
    };

export interface TracedDelivery {
  outboxId: number;
  origin: string;
  status: string;
  attempts: number;
  parts: number;
  platformMessageIds: string[];
  lastError: string | null;
  createdAt: number;
  sentAt: number | null;
  text: string;
  /** Set when delivery failover tried the fallback list: the path that delivered, or null when none did. */
  failover?: {
    path: string | null;
    tried: string[];
    /** The report had already reached the owner on `path` (its own delivery there): the failover sent nothing. */
    already?: true;
  };
}

/** A message's life, from the database alone (`magpie trace`, the dashboard's trace page). */
export interface MessageTrace {
  inboxId: number;
  channel: string;
  chatId: string;
  messageId: string;
  userId: string;
  sessionKey: string;
  text: string;
  receivedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  status: string;
  outcome: MessageOutcome | null;
  cause: string | null;
  access: { verdict: string; reason: string | null } | null;
  turns: TracedTurn[];
  deliveries: TracedDelivery[];
}

/**
 * A refused message's trace in the shape of every other message's (`magpie trace --json`): the same fields, with
 * what a refusal never has empty — no inbox id, session, text (never kept), turns or deliveries — and
 * `outcome: "refused"`, its cause the access verdict's reason.
 */
export type RefusedTrace = Omit<MessageTrace, "inboxId" | "sessionKey" | "text" | "outcome"> & {
  inboxId: null;
  sessionKey: null;
  text: null;
  outcome: "refused";
};

/** The trace of a message access control turned away (see `RefusedTrace`). */
export function refusedTraceOf(refusal: RefusedMessage): RefusedTrace {
  return {
    inboxId: null,
    channel: refusal.channel,
    chatId: refusal.chatId,
    messageId: refusal.messageId,
    userId: refusal.userId,
    sessionKey: null,
    text: null,
    receivedAt: refusal.at,
    startedAt: null,
    // Decided as it arrived: nothing more happens to it.
    finishedAt: refusal.at,
    status: "done",
    outcome: "refused",
    cause: refusal.reason,
    access: { verdict: refusal.verdict, reason: refusal.reason },
    turns: [],
    deliveries: [],
  };
}

/** Builds a message's trace from the inbox, `trace_events` and the outbox. */
export function traceOf(trace: TraceRepository, item: InboxItem): MessageTrace {
  const { message } = item;
  const access = trace.accessOf(message.channel, message.chatId, message.messageId);
  const turns = new Map<string, TracedTurn>();
  // Several turns may share an id (a delegation runs under its caller's): they are told apart by start order.
  const open: TracedTurn[] = [];
  let current: TracedTurn | undefined;
  // Calls made for the turn before it started (a voice note's transcription) go to the turn they were for.
  const early: TracedStep[] = [];
  for (const row of trace.rowsOfTurns(trace.turnsOf(item.id))) {
    const data = row.data;
    if (row.kind === "turn_started") {
      current = {
        turnId: row.turnId ?? "",
        origin: String(data.origin ?? ""),
        agent: String(data.agent ?? ""),
        startedAt: row.at,
        finishedAt: null,
        status: null,
        errorCode: null,
        durationMs: null,
        iterations: null,
        steps: early.splice(0),
      };
      turns.set(`${row.turnId}#${turns.size}`, current);
      open.push(current);
    } else if (row.kind === "turn_finished") {
      const turn =
        [...open]
          .reverse()
          .find((candidate) => candidate.agent === data.agent && candidate.origin === data.origin) ??
        open[open.length - 1];
      if (!turn) continue;
      turn.finishedAt = row.at;
      turn.status = String(data.status ?? "");
      turn.errorCode = typeof data.errorCode === "string" ? data.errorCode : null;
      turn.durationMs = Number(data.durationMs ?? 0);
      turn.iterations = Number(data.iterations ?? 0);
      open.splice(open.indexOf(turn), 1);
      current = open[open.length - 1] ?? turn;
    } else if (row.kind === "llm") {
      const steps = (open[open.length - 1] ?? current)?.steps ?? early;
      steps.push({
        type: "llm",
        at: row.at,
        kind: String(data.kind ?? "chat"),
        model: String(data.model ?? ""),
        result: String(data.result ?? ""),
        promptTokens: Number(data.promptTokens ?? 0),
        completionTokens: Number(data.completionTokens ?? 0),
        estimated: data.estimated === true,
        costUsd: typeof data.costUsd === "number" ? data.costUsd : null,
        latencyMs: Number(data.latencyMs ?? 0),
        fallback: data.fallback === true,
        errorCode: typeof data.errorCode === "string" ? data.errorCode : null,
      });
    } else if (row.kind === "tool") {
      const steps = (open[open.length - 1] ?? current)?.steps ?? early;
      steps.push({
        type: "tool",
        at: row.at,
        tool: String(data.tool ?? ""),
        verdict: String(data.verdict ?? ""),
        ok: data.ok === true,
        errorCode: typeof data.errorCode === "string" ? data.errorCode : null,
        durationMs: Number(data.durationMs ?? 0),
        untrusted: typeof data.untrusted === "string" ? data.untrusted : null,
      });
    }
  }
  const outbox = trace.outboxOf(item.id);
  return {
    inboxId: item.id,
    channel: message.channel,
    chatId: message.chatId,
    messageId: message.messageId,
    userId: message.userId,
    sessionKey: item.sessionKey,
    text: message.text,
    receivedAt: item.receivedAt,
    startedAt: item.startedAt,
    finishedAt: item.finishedAt,
    status: item.status,
    outcome: item.outcome,
    cause: item.outcomeCause,
    access: access ? { verdict: access.verdict, reason: access.reason } : null,
    turns: [...turns.values()],
    deliveries: outbox,
  };
}
