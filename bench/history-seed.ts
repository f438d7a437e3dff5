/**
 * Fills a Magpie database with the rows `count` answered messages leave behind, fast: one transaction of prepared
 * statements (1,000,000 messages: about a minute of CPU, a 2 GB file). The shape follows what a running Magpie writes with its
 * defaults (measured on the message path): per message an inbox row (done, answered), its reply in the outbox
 * (sent), seven trace rows, one chat call in the usage ledger, a tool call in the audit log for every third
 * message; every twentieth message a history compaction (its summary kept as a conversation memory) and an agent
 * cron run (a session of its own, kept: `retention.messagesDays` is null by default); one core memory per
 * 200 messages. Chats keep what compaction leaves (a summary and the last `HISTORY_KEPT` messages). Timestamps
 * spread over the last `days` (inside the default 30-day retention, so the start-up pruning leaves them).
 */
import type { Db } from "../src/store/index.js";

export interface SeedOptions {
  /** Answered messages to leave behind. */
  messages: number;
  /** Chats they came from (`telegram:<firstChatId + i>`). */
  chats?: number;
  firstChatId?: number;
  /** Their timestamps spread over this many days before `now`. */
  days?: number;
  now?: number;
}

export interface SeedReport {
  /** Rows per table after seeding. */
  rows: Record<string, number>;
  ms: number;
}

/** Messages kept per chat after compaction (what a 12,000-token budget holds of short exchanges, roughly). */
export const HISTORY_KEPT = 40;
const DAY_MS = 86_400_000;
const WORDS = [
  "backup",
  "disk",
  "garden",
  "sensor",
  "train",
  "invoice",
  "router",
  "camera",
  "dentist",
  "tomorrow",
  "weather",
  "server",
  "photo",
  "concert",
  "recipe",
  "battery",
];

/** A short sentence that varies with `index` (so FTS has a vocabulary of realistic spread). */
function sentence(index: number): string {
  const word = (offset: number) => WORDS[(index * 7 + offset * 13) % WORDS.length]!;
  return `Please check the ${word(1)} and the ${word(2)} before ${word(3)}, note ${index}.`;
}

export function seedHistory(db: Db, options: SeedOptions): SeedReport {
  const started = performance.now();
  const count = options.messages;
  const chats = options.chats ?? 20;
  const firstChatId = options.firstChatId ?? 9_000;
  const now = options.now ?? Date.now();
  const span = (options.days ?? 28) * DAY_MS;
  const spacing = span / Math.max(1, count);
  const start = now - span;

  const inbox = db.prepare(
    `INSERT INTO inbox (channel, message_id, session_key, payload, status, received_at, started_at, finished_at, outcome)
     VALUES ('telegram', ?, ?, ?, 'done', ?, ?, ?, 'answered')`,
  );
  const outbox = db.prepare(
    `INSERT INTO outbox (channel, chat_id, reply_to_message_id, payload, origin, inbox_id, status, attempts,
       next_attempt_at, parts_sent, platform_message_ids, created_at, sent_at)
     VALUES ('telegram', ?, ?, ?, 'reply', ?, 'sent', 1, ?, 1, ?, ?, ?)`,
  );
  const trace = db.prepare(
    `INSERT INTO trace_events (at, kind, inbox_id, turn_id, outbox_id, channel, chat_id, message_id, data)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const usage = db.prepare(
    `INSERT INTO llm_usage (at, origin, session_key, history_key, turn_id, job_id, run_id, agent, kind, model,
       prompt_tokens, completion_tokens, estimated, cost_usd)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'main', 'chat', 'test-model', ?, ?, 0, ?)`,
  );
  const audit = db.prepare(
    `INSERT INTO audit (at, session_key, agent, sender, tool, arguments, verdict, outcome, duration_ms, result_excerpt)
     VALUES (?, ?, 'main', ?, 'file_list', '{"path":"."}', 'allow', 'ok', 3, '{"ok":true,"entries":["notes.md"]}')`,
  );
  const session = db.prepare(
    "INSERT INTO sessions (key, agent, summary, created_at, updated_at) VALUES (?, 'main', ?, ?, ?) ON CONFLICT (key) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at",
  );
  const message = db.prepare(
    "INSERT INTO messages (session_key, role, content, tokens, created_at) VALUES (?, ?, ?, ?, ?)",
  );
  const memory = db.prepare(
    `INSERT INTO memories (agent, key, content, category, created_at, updated_at, access_count)
     VALUES ('main', ?, ?, ?, ?, ?, ?)`,
  );
  const job = db.prepare(
    `INSERT INTO cron_jobs (name, schedule_kind, expression, timezone, kind, payload, deliver, source, next_run_at,
       created_at, updated_at)
     VALUES ('seeded-digest', 'cron', '0 * * * *', 'UTC', 'agent', 'summarise the day', '{"mode":"none"}', 'cli', ?, ?, ?)`,
  );
  const run = db.prepare(
    `INSERT INTO cron_runs (job_id, scheduled_at, started_at, finished_at, duration_ms, status, trigger, output)
     VALUES (?, ?, ?, ?, 40, 'ok', 'schedule', 'All quiet.')`,
  );

  // Seeding only: a page cache that holds every index being filled (the bot's own connection sets its own).
  const cacheSize = db.pragma("cache_size", { simple: true }) as number;
  db.pragma("cache_size = -2000000");
  db.transaction(() => {
    const jobId = Number(job.run(now + DAY_MS, start, start).lastInsertRowid);
    for (let index = 0; index < count; index++) {
      const at = Math.floor(start + index * spacing);
      const chatId = String(firstChatId + (index % chats));
      const sessionKey = `telegram:${chatId}`;
      // Far above the ids a fake Bot API hands out (from 5,000), so a new message is never taken for a seeded one.
      const messageId = `${chatId}:${100_000_000 + index}`;
      const text = sentence(index);
      const payload = JSON.stringify({
        channel: "telegram",
        chatId,
        messageId,
        userId: chatId,
        userName: "Owner",
        text,
        isDirect: true,
        mentionsBot: false,
        attachments: [],
        receivedAt: at,
      });
      const inboxId = Number(inbox.run(messageId, sessionKey, payload, at, at + 5, at + 900).lastInsertRowid);
      const reply = `Done: ${text}`;
      const outboxId = Number(
        outbox.run(
          chatId,
          messageId,
          JSON.stringify({ text: reply }),
          inboxId,
          at + 900,
          `["${index + 1_000_000}"]`,
          at + 900,
          at + 950,
        ).lastInsertRowid,
      );
      const turnId = `inbox:${inboxId}`;
      trace.run(
        at,
        "access",
        null,
        null,
        null,
        "telegram",
        chatId,
        messageId,
        `{"userId":"${chatId}","verdict":"allowed"}`,
      );
      trace.run(
        at + 1,
        "received",
        inboxId,
        null,
        null,
        "telegram",
        chatId,
        messageId,
        `{"textChars":${text.length}}`,
      );
      trace.run(
        at + 5,
        "turn_started",
        inboxId,
        turnId,
        null,
        null,
        null,
        null,
        `{"origin":"user","agent":"main","sessionKey":"${sessionKey}"}`,
      );
      trace.run(
        at + 800,
        "llm",
        null,
        turnId,
        null,
        null,
        null,
        null,
        `{"origin":"user","sessionKey":"${sessionKey}","kind":"chat","model":"test-model","result":"ok","promptTokens":812,"completionTokens":64,"estimated":false,"latencyMs":790}`,
      );
      trace.run(
        at + 890,
        "turn_finished",
        null,
        turnId,
        null,
        null,
        null,
        null,
        '{"origin":"user","agent":"main","status":"ok","durationMs":885,"iterations":1,"toolCalls":0}',
      );
      trace.run(at + 900, "outcome", inboxId, null, null, null, null, null, '{"outcome":"answered"}');
      trace.run(
        at + 950,
        "delivery",
        inboxId,
        null,
        outboxId,
        "telegram",
        chatId,
        null,
        `{"status":"sent","attempts":1,"platformMessageIds":["${index + 1_000_000}"]}`,
      );
      usage.run(at + 800, "user", sessionKey, sessionKey, turnId, null, null, 812, 64, 0.0004);
      if (index % 3 === 0) audit.run(at + 400, sessionKey, `telegram:${chatId} (owner)`);
      if (index % 20 === 19) {
        // A compaction: its summary becomes a conversation memory.
        memory.run(
          `conversation:${sessionKey}:${new Date(at).toISOString()}`,
          `The owner asked about ${text}`,
          "conversation",
          at,
          at,
          0,
        );
        // An agent cron run: a session of its own, never compacted.
        const runId = Number(run.run(jobId, at, at, at + 40).lastInsertRowid);
        const runSession = `cron:${jobId}:${runId}`;
        session.run(runSession, null, at, at);
        message.run(runSession, "user", "summarise the day", 6, at);
        message.run(runSession, "assistant", "All quiet.", 5, at + 40);
        usage.run(
          at + 40,
          "schedule",
          runSession,
          runSession,
          `cron:${jobId}:${runId}`,
          jobId,
          runId,
          300,
          20,
          0.0001,
        );
      }
      if (index % 200 === 0) {
        memory.run(`note.${index}`, `Remember: ${text}`, "core", at, at, index % 7);
      }
    }
    // What compaction leaves in each chat: a summary and the newest messages.
    for (let chat = 0; chat < Math.min(chats, count); chat++) {
      const chatId = String(firstChatId + chat);
      const sessionKey = `telegram:${chatId}`;
      session.run(sessionKey, "The owner asks about backups, sensors and trains.", start, now);
      const kept = Math.min(HISTORY_KEPT, Math.ceil(count / chats) * 2);
      for (let index = 0; index < kept; index++) {
        const at = now - (kept - index) * 60_000;
        message.run(sessionKey, index % 2 === 0 ? "user" : "assistant", sentence(index), 20, at);
      }
    }
  })();
  db.pragma(`cache_size = ${cacheSize}`);
  db.pragma("wal_checkpoint(TRUNCATE)");

  const tables = [
    "inbox",
    "outbox",
    "trace_events",
    "llm_usage",
    "audit",
    "sessions",
    "messages",
    "memories",
    "cron_runs",
  ];
  const rows = Object.fromEntries(
    tables.map((table) => [table, db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number]),
  );
  return { rows, ms: performance.now() - started };
}
