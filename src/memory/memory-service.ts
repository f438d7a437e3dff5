import type { Logger } from "pino";
import { type Clock, systemClock } from "../core/clock.js";
import type { Role } from "../core/identity.js";
import type { Db } from "../store/index.js";
import type { Embedder } from "./embedder.js";
import { EmbeddingSync } from "./embedding-sync.js";
import { queryTerms } from "./fts-query.js";
import { audienceOfWrite, audiencesFor } from "./memory-access.js";
import { MemoryRepository } from "./memory-repository.js";
import { categoryWeight, describeMatch, fuseRanks } from "./rank-fusion.js";
import type { MemoryCategory, MemoryRecord, RecallHit, RecallResult } from "./types.js";
import { VectorIndexes } from "./vector-indexes.js";
import { dot } from "./vector-math.js";

/** Vector matches below this cosine are noise, not memories worth showing. */
const MIN_SIMILARITY = 0.25;
/** Memories embedded per round in `storeMany` (the embedder splits them into requests). */
const BULK_EMBED_CHUNK = 512;
/**
 * Sign-code candidates rescored with exact vectors read from SQLite. 400 finds ≥ 97 % of the exact top-10 at
 * 100,000 memories in `npm run bench -- memory` (200: 93 %); each costs one row read and one dot product.
 */
export const RESCORE_CANDIDATES = 400;

export interface MemoryServiceOptions {
  db: Db;
  /** Null: keyword search only (no `llm.embeddingModel`). */
  embedder: Embedder | null;
  logger: Logger;
  clock?: Clock;
}

export interface StoreOutcome {
  memory: MemoryRecord;
  created: boolean;
  /** "keyword+vector" once the embedding is saved; "keyword" without embeddings or when the call failed. */
  indexed: "keyword" | "keyword+vector";
}

/** Long-term memory of every agent: store, hybrid recall (BM25 + vectors), forget. */
export class MemoryService {
  readonly repository: MemoryRepository;
  /** Null: keyword search only. The usage feature listens to its requests (`onUsage`). */
  readonly embedder: Embedder | null;
  private readonly indexes: VectorIndexes;
  private readonly sync: EmbeddingSync | null;
  private readonly logger: Logger;
  private readonly clock: Clock;

  constructor(options: MemoryServiceOptions) {
    this.repository = new MemoryRepository(options.db);
    this.indexes = new VectorIndexes(this.repository);
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.embedder = options.embedder;
    this.sync = options.embedder
      ? new EmbeddingSync(this.repository, options.embedder, this.indexes, this.logger)
      : null;
  }

  /**
   * Upserts `key` as the owners' memory; waits for its embedding (a failure is logged and left to the
   * background backfill). `role` is the writer's: a guest's turn can't store (`memory.guest_not_allowed`).
   */
  async store(input: {
    agent: string;
    key: string;
    content: string;
    category?: MemoryCategory;
    role: Role;
  }): Promise<StoreOutcome> {
    const audience = audienceOfWrite(input.role, "store");
    const { record, created } = this.repository.upsert(
      {
        agent: input.agent,
        key: input.key.trim(),
        content: input.content.trim(),
        category: input.category ?? "core",
        audience,
      },
      this.clock.now(),
    );
    if (!this.sync) return { memory: record, created, indexed: "keyword" };
    // A changed text lost its old vector in the upsert; drop it from the in-memory index too.
    if (!this.repository.vectorMeta(record.id)) this.indexes.removed(record.agent, record.id);
    try {
      await this.sync.embedRecords([record], { interactive: true });
      return { memory: record, created, indexed: "keyword+vector" };
    } catch (error) {
      this.logger.warn(
        { code: "memory.embedding_failed", err: error, model: this.sync.model, key: record.key },
        "Embedding a memory failed; it is searchable by keyword now and will be embedded later",
      );
      return { memory: record, created, indexed: "keyword" };
    }
  }

  /**
   * Upserts many owners' memories in one transaction, then embeds them in batches (imports and bulk loads,
   * which only the owner runs). An embedding failure is logged; the background backfill retries later.
   */
  async storeMany(
    items: Array<{ agent: string; key: string; content: string; category?: MemoryCategory }>,
  ): Promise<{ stored: number; indexed: "keyword" | "keyword+vector" }> {
    const now = this.clock.now();
    const records = this.repository.transaction(() =>
      items.map((item) => {
        const { record } = this.repository.upsert(
          {
            agent: item.agent,
            key: item.key.trim(),
            content: item.content.trim(),
            category: item.category ?? "core",
            audience: "owners",
          },
          now,
        );
        if (this.sync && !this.repository.vectorMeta(record.id))
          this.indexes.removed(record.agent, record.id);
        return record;
      }),
    );
    if (!this.sync) return { stored: records.length, indexed: "keyword" };
    try {
      for (let start = 0; start < records.length; start += BULK_EMBED_CHUNK) {
        await this.sync.embedRecords(records.slice(start, start + BULK_EMBED_CHUNK));
      }
      return { stored: records.length, indexed: "keyword+vector" };
    } catch (error) {
      this.logger.warn(
        { code: "memory.embedding_failed", err: error, model: this.sync.model, count: records.length },
        "Embedding stored memories failed; they are searchable by keyword now and will be embedded later",
      );
      return { stored: records.length, indexed: "keyword" };
    }
  }

  /**
   * Hybrid recall: BM25 and cosine lists fused by reciprocal rank, weighted by category and age. Only
   * memories `role` may see are returned: none for a guest.
   */
  async recall(input: {
    agent: string;
    query: string;
    /** The reader's role. */
    role: Role;
    limit?: number;
    /** Count this as an access (default true). */
    touch?: boolean;
    signal?: AbortSignal;
  }): Promise<RecallResult> {
    const audiences = new Set(audiencesFor(input.role));
    // Nothing to see: not even the query is looked up or embedded.
    if (audiences.size === 0) return { hits: [], mode: "keyword" };
    const limit = Math.max(1, input.limit ?? 5);
    const pool = Math.max(20, limit * 4);
    const keywordIds = this.repository
      .keywordSearch(input.agent, queryTerms(input.query), pool)
      .map((row) => row.id);

    let vectorHits: Array<{ id: number; similarity: number }> = [];
    let mode: RecallResult["mode"] = "keyword";
    let fallbackReason: string | undefined;
    if (this.sync && input.query.trim()) {
      try {
        vectorHits = await this.nearest(input.agent, input.query, pool, input.signal);
        mode = "hybrid";
      } catch (error) {
        fallbackReason = error instanceof Error ? error.message : String(error);
        this.logger.warn(
          { code: "memory.embedding_failed", err: error, model: this.sync.model },
          "Embedding the recall query failed; falling back to keyword search",
        );
      }
    }

    const candidates = fuseRanks(keywordIds, vectorHits);
    const records = this.repository.getMany(candidates.map((candidate) => candidate.id));
    const now = this.clock.now();
    const hits: RecallHit[] = [];
    for (const candidate of candidates) {
      const memory = records.get(candidate.id);
      if (!memory || !audiences.has(memory.audience)) continue;
      const weight = categoryWeight(memory, now);
      const { matchedBy, why } = describeMatch(candidate, weight.note);
      hits.push({ memory, score: candidate.rrf * weight.factor, matchedBy, why });
    }
    hits.sort((a, b) => b.score - a.score || b.memory.updatedAt - a.memory.updatedAt);
    const top = hits.slice(0, limit);
    if (input.touch !== false)
      this.repository.recordAccess(
        top.map((hit) => hit.memory.id),
        now,
      );
    return { hits: top, mode, ...(fallbackReason ? { fallbackReason } : {}) };
  }

  /**
   * Deletes `key` with its index rows and vector; undefined when there was no such memory. `role` is the
   * caller's: a guest's turn can't forget (`memory.guest_not_allowed`).
   */
  forget(agent: string, key: string, role: Role): MemoryRecord | undefined {
    audienceOfWrite(role, "forget");
    const removed = this.repository.delete(agent, key.trim());
    if (removed) this.indexes.removed(agent, removed.id);
    return removed;
  }

  get(agent: string, key: string): MemoryRecord | undefined {
    return this.repository.get(agent, key.trim());
  }

  list(agent: string, options: { category?: MemoryCategory; limit?: number } = {}): MemoryRecord[] {
    return this.repository.list(agent, options);
  }

  /** Core memories (facts about the owner) that `role` may see, most used first: none for a guest. */
  core(agent: string, role: Role, limit = 50): MemoryRecord[] {
    return this.repository.core(agent, audiencesFor(role), limit);
  }

  /** Remembers that a guest had a turn in `sessionKey`: its conversation summaries are never stored. */
  noteGuestTurn(sessionKey: string): void {
    this.repository.markGuestSession(sessionKey, this.clock.now());
  }

  /** True when a guest has had a turn in `sessionKey` (ever, across restarts). */
  hadGuest(sessionKey: string): boolean {
    return this.repository.hadGuest(sessionKey);
  }

  count(agent?: string): number {
    return this.repository.count(agent);
  }

  /** Every memory (of one agent, or all), oldest first. */
  all(agent?: string): Iterable<MemoryRecord> {
    return this.repository.iterate(agent);
  }

  /** Embeds, in the background, memories without a current vector (e.g. stored while the endpoint was down). */
  startBackgroundIndexing(): void {
    this.sync?.scheduleBackfill();
  }

  /** Resolves when background embedding has finished. */
  async idle(): Promise<void> {
    await this.sync?.idle();
  }

  /** Stops background embedding (app shutdown). */
  async close(): Promise<void> {
    await this.sync?.stop();
  }

  /**
   * The memories nearest to `query` by cosine (≥ the noise floor), best first; throws when the
   * embedding call fails, returns [] without embeddings.
   */
  async nearest(
    agent: string,
    query: string,
    limit: number,
    signal?: AbortSignal,
  ): Promise<Array<{ id: number; similarity: number }>> {
    const sync = this.sync;
    if (!sync) return [];
    const [vector] = await sync.embedCalled([query], { interactive: true, signal });
    if (!vector) return [];
    sync.learnDimensions(vector.length);
    const index = this.indexes.get(agent, sync.model, vector.length);
    const shortlist = index.nearest(vector, Math.max(RESCORE_CANDIDATES, limit));
    const exact = this.repository.vectorsOf(shortlist.map((candidate) => candidate.id));
    const scored: Array<{ id: number; similarity: number }> = [];
    for (const [id, stored] of exact) {
      if (stored.length !== vector.length) continue;
      const similarity = dot(vector, stored);
      if (similarity >= MIN_SIMILARITY) scored.push({ id, similarity });
    }
    return scored.sort((a, b) => b.similarity - a.similarity).slice(0, limit);
  }
}
