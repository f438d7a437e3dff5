import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { seedHistory } from "../../bench/history-seed.js";
import { retentionTargets } from "../../src/app/retention-feature.js";
import { openDatabase } from "../../src/store/database.js";
import { pruneOnce } from "../../src/store/retention.js";
import { TraceRepository, traceOf } from "../../src/store/trace.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTelegramApp, type TelegramApp } from "../helpers/telegram-app.js";

/**
 * A message costs the same on day 1 and day 300 (issue 37). The whole app answers messages on a database that
 * already holds a history (bench/history-seed.ts) while every statement it runs is recorded with its arguments
 * and the rows it read: plain answers, a tool call (audit), a memory stored and recalled, budgets checked,
 * history compacted, the outbox sent, the trace written and read, retention run, `/metrics` scraped (its collectors
 * read the inbox, outbox and trace on every scrape). Then each statement's
 * `EXPLAIN QUERY PLAN` must not walk a table that grows with history (a `SCAN` of it, or of a full index of it),
 * must not sort every match of a growing table to keep a few (`USE TEMP B-TREE` under a LIMIT), and no statement
 * may read more than `ROW_BOUND` rows — the owner's chat holds a backlog of 6,000 messages (compactions held
 * back by a budget cap), which a turn must not read whole.
 */

/** Tables whose rows accumulate with every message, job run or memory. */
const GROWING = new Set([
  "inbox",
  "outbox",
  "messages",
  "sessions",
  "trace_events",
  "llm_usage",
  "llm_usage_daily",
  "audit",
  "memories",
  "memory_vectors",
  "memory_guest_sessions",
  "cron_runs",
  "tasks",
  "approvals",
  "questions",
]);

/** Rows one statement may read: the keyword search's posting budget (2,000) is the largest bounded read. */
const ROW_BOUND = 2_100;

/**
 * Plans that look like a walk but are bounded, each with the reason. Matched against the statement's text.
 */
const BOUNDED: Array<{ statement: RegExp; plan: RegExp; why: string }> = [
  {
    statement: /bm25\(memories_fts/,
    plan: /USE TEMP B-TREE FOR ORDER BY/,
    why: "ranks the FTS matches of selective terms only: keyword-search.ts probes each term's postings first and leaves out terms past its 2,000-posting budget",
  },
  {
    statement: /^SELECT \* FROM inbox ORDER BY id DESC LIMIT \?$/,
    plan: /^SCAN inbox$/,
    why: "the newest messages: the rowid walk from the end stops after LIMIT rows",
  },
  {
    statement: /FROM trace_events WHERE kind = 'access' AND channel = \? AND chat_id = \? AND message_id IN/,
    plan: /USE TEMP B-TREE FOR ORDER BY/,
    why: "sorts the trace rows of one platform message (found by the message index): one or two",
  },
];

const OWNER = 4_242;
const BACKLOG = 6_000;

interface Recorded {
  source: string;
  args: unknown[];
  maxRows: number;
  calls: number;
}

/** Every statement run against `file`, recorded by patching better-sqlite3's Statement methods. */
function recordStatements(file: () => string | null): { recorded: Map<string, Recorded>; restore(): void } {
  const recorded = new Map<string, Recorded>();
  const probe = new Database(":memory:");
  const prototype = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, unknown>;
  probe.close();
  const originals = new Map<string, (...args: unknown[]) => unknown>();
  const note = (statement: { source: string; database: { name: string } }, args: unknown[], rows: number) => {
    if (statement.database.name !== file()) return;
    const entry = recorded.get(statement.source) ?? { source: statement.source, args, maxRows: 0, calls: 0 };
    entry.calls++;
    entry.maxRows = Math.max(entry.maxRows, rows);
    recorded.set(statement.source, entry);
  };
  for (const method of ["run", "get", "all", "iterate"]) {
    const original = prototype[method] as (...args: unknown[]) => unknown;
    originals.set(method, original);
    prototype[method] = function (this: { source: string; database: { name: string } }, ...args: unknown[]) {
      const result = original.apply(this, args);
      if (method === "all") note(this, args, (result as unknown[]).length);
      else if (method === "iterate") {
        // Counts the rows the caller actually took (a bounded read stops early).
        const statement = this;
        let rows = 0;
        const counted = (function* () {
          try {
            for (const row of result as Iterable<unknown>) {
              rows++;
              yield row;
            }
          } finally {
            note(statement, args, rows);
          }
        })();
        return counted;
      } else note(this, args, method === "get" ? 1 : 0);
      return result;
    };
  }
  return {
    recorded,
    restore() {
      for (const [method, original] of originals) prototype[method] = original;
    },
  };
}

/** What `EXPLAIN QUERY PLAN` objects to in one statement, or null. */
function objection(db: Database.Database, entry: Recorded, partialIndexes: Set<string>): string | null {
  const plan = (
    db.prepare(`EXPLAIN QUERY PLAN ${entry.source}`).all(...entry.args) as Array<{ detail: string }>
  ).map((row) => row.detail);
  const text = plan.join("; ");
  const allowed = BOUNDED.find((bound) => bound.statement.test(entry.source));
  for (const detail of plan) {
    if (allowed?.plan.test(detail)) continue;
    const scan = /^SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?/.exec(detail);
    if (scan && GROWING.has(scan[1]!) && !(scan[2] && partialIndexes.has(scan[2]))) {
      return `walks ${scan[1]}: ${text}`;
    }
    if (/USE TEMP B-TREE FOR ORDER BY/.test(detail) && /\bLIMIT\b/i.test(entry.source)) {
      const tables = [...text.matchAll(/(?:SEARCH|SCAN) (\w+)/g)].map((match) => match[1]!);
      if (tables.some((table) => GROWING.has(table))) return `sorts every match to keep a few: ${text}`;
    }
  }
  if (entry.maxRows > ROW_BOUND) return `read ${entry.maxRows} rows in one call`;
  return null;
}

const cleanup: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task();
});

describe("query plans on the message path", () => {
  let harness: TelegramApp | undefined;

  it("no statement walks a growing table or reads a growing number of rows", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-plans-"));
    const file = path.join(dataDir, "magpie.db");
    const seeded = openDatabase(file);
    seedHistory(seeded, { messages: 3_000, chats: 4, firstChatId: OWNER });
    // The owner's chat: a backlog compaction never got to (a budget cap held it back).
    const backlog = seeded.prepare(
      "INSERT INTO messages (session_key, role, content, tokens, created_at) VALUES (?, ?, ?, 20, ?)",
    );
    seeded.transaction(() => {
      for (let index = 0; index < BACKLOG; index++) {
        backlog.run(
          `telegram:${OWNER}`,
          index % 2 ? "assistant" : "user",
          `backlog ${index}`,
          Date.now() - 1e9,
        );
      }
    })();
    seeded.close();

    let appFile: string | null = null;
    const recorder = recordStatements(() => appFile);
    cleanup.push(() => recorder.restore());
    appFile = file;
    harness = await startTelegramApp({
      access: { allowFrom: [OWNER] },
      app: { dataDir },
      config: {
        llm: { embeddingModel: "embed-small" },
        agent: { historyTokens: 400 },
        budgets: {
          daily: { usd: 1_000 },
          perChat: { tokens: 100_000_000 },
          perTurn: { tokens: 100_000_000 },
          perJobRun: { tokens: 100_000_000 },
        },
        retention: { messagesDays: 365 },
        http: { metrics: { enabled: true } },
      },
    });
    cleanup.push(() => harness?.stop());
    const { telegram } = harness;
    const { llm, app } = harness.testApp;
    const ask = async (text: string, ...steps: Parameters<NonNullable<typeof llm>["script"]>) => {
      const before = telegram.sentTexts().length;
      llm!.script(...steps);
      telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text });
      await waitFor(() => telegram.sentTexts().length > before, `the reply to ${text}`, 15_000);
      await app.router.queues.idle();
    };
    const summary = reply.text("The owner talked about backups.");
    await ask("hello there", reply.text("Hello."), summary);
    await ask(
      "list my files",
      reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]),
      reply.text("Here."),
      summary,
    );
    await ask(
      "remember that the backup disk is blue",
      reply.toolCalls([
        { name: "memory_store", arguments: { key: "backup.disk", content: "The backup disk is blue." } },
      ]),
      reply.text("Noted."),
      summary,
    );
    await ask("which colour is the backup disk?", reply.text("Blue."), summary);

    const db = app.store.db;
    await pruneOnce(
      retentionTargets(db, harness.testApp.config.retention, "UTC", { now: () => Date.now() }),
      Date.now(),
    );
    const scraped = await fetch(`${harness.testApp.url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain("magpie_delivery_failovers_total");
    const trace = new TraceRepository(db);
    const last = app.store.inbox.recent(1)[0]!;
    expect(traceOf(trace, last).deliveries).toHaveLength(1);
    recorder.restore();

    const dml = [...recorder.recorded.values()].filter((entry) =>
      /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(entry.source),
    );
    const partialIndexes = new Set(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'")
        .pluck()
        .all() as string[],
    );
    const objections = dml.flatMap((entry) => {
      const found = objection(db, entry, partialIndexes);
      return found ? [`${entry.source.replace(/\s+/g, " ").trim()}\n    → ${found}`] : [];
    });
    expect(objections, objections.join("\n")).toEqual([]);

    // The scenario reached every part of the message path it claims to: a compaction a turn (the backlog),
    // the tool call audited, the memory stored.
    llm!.assertDone();
    expect(app.store.audit.recent(5).map((entry) => entry.tool)).toContain("file_list");
    expect(db.prepare("SELECT content FROM memories WHERE key = 'backup.disk'").pluck().get()).toBe(
      "The backup disk is blue.",
    );
    const touched = (table: string) => dml.some((entry) => new RegExp(`\\b${table}\\b`).test(entry.source));
    for (const table of [
      "inbox",
      "outbox",
      "messages",
      "trace_events",
      "llm_usage",
      "audit",
      "memories",
      "memories_fts",
    ]) {
      expect(touched(table), table).toBe(true);
    }
    expect(dml.some((entry) => /DELETE FROM messages WHERE session_key/.test(entry.source))).toBe(true);
    // The outbox worker's reads (in order per chat: a NOT EXISTS over the older pending rows of the chat).
    expect(dml.some((entry) => /FROM outbox AS item WHERE status = 'pending'/.test(entry.source))).toBe(true);
    expect(
      dml.some((entry) =>
        /FROM trace_events WHERE kind = 'failover' AND json_extract\(data, '\$\.already'\) IS NULL GROUP BY/.test(
          entry.source,
        ),
      ),
    ).toBe(true);
    expect(dml.some((entry) => /DELETE FROM trace_events/.test(entry.source))).toBe(true);
  }, 60_000);
});
