import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import { atomic } from "../store/atomic.js";
import { ChangeCounters } from "../store/change-counters.js";
import type { Db } from "../store/index.js";
import { KeywordSearch } from "./keyword-search.js";
import type { MemoryAudience } from "./memory-access.js";
import { MEMORY_CATEGORIES, type MemoryCategory, type MemoryRecord } from "./types.js";
import { blobToVector, vectorToBlob } from "./vector-math.js";

const memoryRows = row(
  z.object({
    id: z.number(),
    agent: z.string(),
    key: z.string(),
    content: z.string(),
    category: z.enum(MEMORY_CATEGORIES),
    audience: z.literal("owners"),
    created_at: z.number(),
    updated_at: z.number(),
    access_count: z.number(),
    last_accessed_at: z.number().nullable(),
  }),
  "memories",
);
const memoryContent = row(z.object({ content: z.string() }), "memory-repository");
const vectorModel = row(
  z.object({ model: z.string(), dimensions: z.number(), content_hash: z.string() }),
  "memory-repository",
);
const vectorOf = row(z.object({ vector: z.instanceof(Buffer) }), "memory-repository");
const vectorRows = row(
  z.object({ memory_id: z.number(), vector: z.instanceof(Buffer) }),
  "memory-repository",
);

type MemoryRow = NonNullable<ReturnType<typeof memoryRows.one>>;

const toRecord = (row: MemoryRow): MemoryRecord => ({
  id: row.id,
  agent: row.agent,
  key: row.key,
  content: row.content,
  category: row.category,
  audience: row.audience,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  accessCount: row.access_count,
  lastAccessedAt: row.last_accessed_at,
});

/** Records kept read (past this many, all are dropped and read afresh): the core memories and recent recalls. */
const KEPT_RECORDS = 2_000;

/**
 * Each memory row as read, checked and turned into a record once (issue 35, hot path): every turn reads the core
 * memories and the recalled ones again, most of them unchanged. A row is taken from here only when every column
 * read now is the very value read then (an update, a row id reused after a delete: read afresh). What is handed
 * out is frozen: callers share it.
 */
class KeptRecords {
  private readonly kept = new Map<number, { row: MemoryRow; record: MemoryRecord }>();

  record(raw: unknown): MemoryRecord {
    const kept = isRecord(raw) && typeof raw.id === "number" ? this.kept.get(raw.id) : undefined;
    if (kept && isRecord(raw) && sameRow(kept.row, raw)) return kept.record;
    const row = memoryRows.only(raw);
    const record = Object.freeze(toRecord(row));
    if (this.kept.size >= KEPT_RECORDS) this.kept.clear();
    this.kept.set(row.id, { row, record });
    return record;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function sameRow(row: MemoryRow, raw: Record<string, unknown>): boolean {
  return (
    raw.agent === row.agent &&
    raw.key === row.key &&
    raw.content === row.content &&
    raw.category === row.category &&
    raw.audience === row.audience &&
    raw.created_at === row.created_at &&
    raw.updated_at === row.updated_at &&
    raw.access_count === row.access_count &&
    raw.last_accessed_at === row.last_accessed_at
  );
}

export interface StoredVector {
  memoryId: number;
  model: string;
  dimensions: number;
  contentHash: string;
  vector: Float32Array;
}

/** Core lists kept at most (one per agent and role in use; cleared past this). */
const KEPT_CORE_LISTS = 64;

/** SQL for memories, their FTS5 index (kept in sync by triggers) and their embeddings. */
export class MemoryRepository {
  private readonly statements = new Map<string, Statement>();
  private keyword: KeywordSearch | undefined;
  private readonly read = new KeptRecords();
  private readonly counters: ChangeCounters;
  /** Each core list as last read, by agent, audiences and limit, with the counter read before it. */
  private readonly keptCore = new Map<string, { counter: number; records: MemoryRecord[] }>();

  constructor(private readonly db: Db) {
    this.counters = new ChangeCounters(db);
  }

  /** Prepared once per SQL text: compiling dominates the cost of these small queries. */
  private sql(text: string): Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  /** Runs `work` in one transaction (bulk writes). */
  transaction<T>(work: () => T): T {
    return atomic(this.db, work);
  }

  /** Inserts or updates the memory `key` of `agent`; `created` is false for an update. */
  upsert(
    input: {
      agent: string;
      key: string;
      content: string;
      category: MemoryCategory;
      audience: MemoryAudience;
    },
    at: number,
  ): { record: MemoryRecord; created: boolean } {
    return this.db.transaction(() => {
      const existing = this.get(input.agent, input.key);
      if (
        existing &&
        existing.content === input.content &&
        existing.category === input.category &&
        existing.audience === input.audience
      ) {
        this.sql("UPDATE memories SET updated_at = ? WHERE id = ?").run(at, existing.id);
        return { record: { ...existing, updatedAt: at }, created: false };
      }
      // A changed text needs a new embedding; until it has one, it is found by keyword only.
      if (existing && existing.content !== input.content) {
        this.sql("DELETE FROM memory_vectors WHERE memory_id = ?").run(existing.id);
      }
      this.sql(
        `INSERT INTO memories (agent, key, content, category, audience, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (agent, key) DO UPDATE SET content = excluded.content, category = excluded.category,
             audience = excluded.audience, updated_at = excluded.updated_at`,
      ).run(input.agent, input.key, input.content, input.category, input.audience, at, at);
      return { record: this.get(input.agent, input.key)!, created: !existing };
    })();
  }

  get(agent: string, key: string): MemoryRecord | undefined {
    const row = memoryRows.one(
      this.sql("SELECT * FROM memories WHERE agent = ? AND key = ?").get(agent, key),
    );
    return row ? toRecord(row) : undefined;
  }

  contentOf(id: number): string | undefined {
    const row = memoryContent.one(this.sql("SELECT content FROM memories WHERE id = ?").get(id));
    return row?.content;
  }

  getMany(ids: number[]): Map<number, MemoryRecord> {
    if (ids.length === 0) return new Map();
    const rows = this.sql("SELECT * FROM memories WHERE id IN (SELECT value FROM json_each(?))").all(
      JSON.stringify(ids),
    );
    const records = new Map<number, MemoryRecord>();
    for (const raw of rows) {
      const record = this.read.record(raw);
      records.set(record.id, record);
    }
    return records;
  }

  /** Deletes the memory; its FTS rows go with the trigger and its vector with the foreign key. */
  delete(agent: string, key: string): MemoryRecord | undefined {
    const existing = this.get(agent, key);
    if (existing) this.sql("DELETE FROM memories WHERE id = ?").run(existing.id);
    return existing;
  }

  /** Newest first; optionally one category. */
  list(agent: string, options: { category?: MemoryCategory; limit?: number } = {}): MemoryRecord[] {
    const rows = (
      options.category
        ? this.sql(
            "SELECT * FROM memories WHERE agent = ? AND category = ? ORDER BY updated_at DESC, id DESC LIMIT ?",
          ).all(agent, options.category, options.limit ?? -1)
        : this.sql("SELECT * FROM memories WHERE agent = ? ORDER BY updated_at DESC, id DESC LIMIT ?").all(
            agent,
            options.limit ?? -1,
          )
    ) as MemoryRow[];
    return rows.map(toRecord);
  }

  /**
   * Core memories seen by `audiences`, most used and most recent first (the ones always shown to the agent). Read
   * again only when the agent's core change counter (migration 037) moved — a core memory stored, changed, deleted
   * or recalled (its access count), by any connection — since the last read (issue 35, hot path: 0.3 ms per turn).
   */
  core(agent: string, audiences: MemoryAudience[], limit: number): MemoryRecord[] {
    if (audiences.length === 0) return [];
    const counter = this.counters.get(`core:${agent}`);
    const key = JSON.stringify([agent, audiences, limit]);
    const kept = this.keptCore.get(key);
    if (kept?.counter === counter) return kept.records.slice();
    const records = this.sql(
      `SELECT * FROM memories WHERE agent = ? AND category = 'core'
         AND audience IN (SELECT value FROM json_each(?))
         ORDER BY access_count DESC, updated_at DESC LIMIT ?`,
    )
      .all(agent, JSON.stringify(audiences), limit)
      .map((raw) => this.read.record(raw));
    if (this.keptCore.size >= KEPT_CORE_LISTS) this.keptCore.clear();
    this.keptCore.set(key, { counter, records });
    return records.slice();
  }

  /** Every memory (all agents, or one), oldest first, one row at a time (export). */
  *iterate(agent?: string): Generator<MemoryRecord> {
    const statement = agent
      ? this.db.prepare("SELECT * FROM memories WHERE agent = ? ORDER BY id").bind(agent) // bind() fixes it: not cached
      : this.db.prepare("SELECT * FROM memories ORDER BY id");
    for (const row of memoryRows.each(statement.iterate())) yield toRecord(row);
  }

  count(agent?: string): number {
    const row = (
      agent
        ? this.sql("SELECT COUNT(*) AS n FROM memories WHERE agent = ?").get(agent)
        : this.sql("SELECT COUNT(*) AS n FROM memories").get()
    ) as { n: number };
    return row.n;
  }

  /** BM25 keyword search over sanitized terms (see keyword-search.ts), best first. */
  /** Prepares the keyword search's statements ahead of the first recall. */
  warm(): void {
    this.keyword ??= new KeywordSearch(this.db);
  }

  keywordSearch(agent: string, terms: string[], limit: number): Array<{ id: number; bm25: number }> {
    this.keyword ??= new KeywordSearch(this.db);
    return this.keyword.search(agent, terms, limit);
  }

  recordAccess(ids: number[], at: number): void {
    if (ids.length === 0) return;
    this.sql(
      "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id IN (SELECT value FROM json_each(?))",
    ).run(at, JSON.stringify(ids));
  }

  // --- sessions guests took part in ---

  /** Remembers that a guest had a turn in `sessionKey` (idempotent; the first time is kept). */
  markGuestSession(sessionKey: string, at: number): void {
    this.sql(
      "INSERT INTO memory_guest_sessions (session_key, first_seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
    ).run(sessionKey, at);
  }

  hadGuest(sessionKey: string): boolean {
    return (
      this.sql("SELECT 1 FROM memory_guest_sessions WHERE session_key = ?").get(sessionKey) !== undefined
    );
  }

  // --- embeddings ---

  vectorMeta(memoryId: number): { model: string; dimensions: number; contentHash: string } | undefined {
    const row = vectorModel.one(
      this.sql("SELECT model, dimensions, content_hash FROM memory_vectors WHERE memory_id = ?").get(
        memoryId,
      ),
    );
    return row ? { model: row.model, dimensions: row.dimensions, contentHash: row.content_hash } : undefined;
  }

  /** A vector already computed by `model` for the same text (any memory): the embedding cache. */
  cachedVector(model: string, contentHash: string): Float32Array | undefined {
    const row = vectorOf.one(
      this.sql("SELECT vector FROM memory_vectors WHERE model = ? AND content_hash = ? LIMIT 1").get(
        model,
        contentHash,
      ),
    );
    return row ? blobToVector(row.vector) : undefined;
  }

  saveVector(memoryId: number, model: string, contentHash: string, vector: Float32Array): void {
    this.sql(
      `INSERT INTO memory_vectors (memory_id, model, dimensions, content_hash, vector) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (memory_id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions,
           content_hash = excluded.content_hash, vector = excluded.vector`,
    ).run(memoryId, model, vector.length, contentHash, vectorToBlob(vector));
  }

  /** Vectors of one agent made by `model` with `dimensions`, for building the in-memory index. */
  *agentVectors(
    agent: string,
    model: string,
    dimensions: number,
  ): Generator<{ memoryId: number; vector: Float32Array }> {
    const statement = this.sql(
      `SELECT v.memory_id AS memory_id, v.vector AS vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id
       WHERE m.agent = ? AND v.model = ? AND v.dimensions = ?`,
    );
    // A cast, on purpose: this walks every vector of the agent on each semantic recall (100,000 at the memory
    // bench's size), where a schema check per row (~0.11 µs) would add a quarter to the scan; the columns are this
    // statement's own two, of a table only this repository writes.
    for (const row of statement.iterate(agent, model, dimensions) as IterableIterator<{
      memory_id: number;
      vector: Buffer;
    }>) {
      yield { memoryId: row.memory_id, vector: blobToVector(row.vector) };
    }
  }

  vectorsOf(ids: number[]): Map<number, Float32Array> {
    if (ids.length === 0) return new Map();
    const rows = vectorRows.all(
      this.sql(
        "SELECT memory_id, vector FROM memory_vectors WHERE memory_id IN (SELECT value FROM json_each(?))",
      ).all(JSON.stringify(ids)),
    );
    return new Map(rows.map((row) => [row.memory_id, blobToVector(row.vector)]));
  }

  /**
   * Memories whose vector is missing or was made by another model or with other dimensions
   * (`dimensions` null: any dimension count of `model` is fine), with ids after `afterId` (a cursor, so
   * one pass over a large store stays linear). Oldest first.
   */
  staleForEmbedding(
    model: string,
    dimensions: number | null,
    afterId: number,
    limit: number,
  ): MemoryRecord[] {
    const rows = memoryRows.all(
      this.sql(
        `SELECT m.* FROM memories m LEFT JOIN memory_vectors v ON v.memory_id = m.id
         WHERE m.id > ? AND (v.memory_id IS NULL OR v.model != ? OR (? IS NOT NULL AND v.dimensions != ?))
         ORDER BY m.id LIMIT ?`,
      ).all(afterId, model, dimensions, dimensions, limit),
    );
    return rows.map(toRecord);
  }
}
