import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { Embedder } from "./embedder.js";
import type { MemoryRepository } from "./memory-repository.js";
import type { MemoryRecord } from "./types.js";
import type { VectorIndexes } from "./vector-indexes.js";

const BACKFILL_BATCH = 64;

/** Hash of the embedded text: an unchanged text is never embedded twice by the same model. */
export const contentHash = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * Keeps memory vectors in step with their text and the configured embedding model: embeds new or changed
 * memories (reusing any vector already made for the same text), and re-embeds in the background what is
 * missing (endpoint was down) or stale (the model or its dimension count changed).
 */
export class EmbeddingSync {
  /** Dimension count of the current model, learned from its answers; null until the first one. */
  private dimensions: number | null = null;
  private backfill: Promise<void> | null = null;
  private backfillAgain = false;
  private stopped = false;
  /** An embedding call failed since the last backfill: memories may lack vectors. */
  private missedSome = false;
  /** Memories being embedded right now; the backfill leaves them to that call. */
  private readonly inFlight = new Set<number>();

  constructor(
    private readonly repository: MemoryRepository,
    readonly embedder: Embedder,
    private readonly indexes: VectorIndexes,
    private readonly logger: Logger,
  ) {}

  get model(): string {
    return this.embedder.model;
  }

  /** Embeds what needs it among `records`; throws when the endpoint fails. */
  async embedRecords(records: MemoryRecord[], options: { interactive?: boolean } = {}): Promise<void> {
    const model = this.embedder.model;
    const todo: Array<{ record: MemoryRecord; hash: string }> = [];
    for (const record of records) {
      const hash = contentHash(record.content);
      const meta = this.repository.vectorMeta(record.id);
      if (meta && meta.model === model && meta.contentHash === hash && this.fits(meta.dimensions)) continue;
      const cached = this.repository.cachedVector(model, hash);
      if (cached && this.fits(cached.length)) this.save(record, hash, cached);
      else todo.push({ record, hash });
    }
    if (todo.length === 0) return;
    for (const item of todo) this.inFlight.add(item.record.id);
    try {
      const vectors = await this.embedCalled(
        todo.map((item) => item.record.content),
        options,
      );
      this.repository.transaction(() => {
        todo.forEach((item, position) => {
          const vector = vectors[position];
          // The memory may have been forgotten or rewritten while the call was in flight.
          if (vector && this.repository.contentOf(item.record.id) === item.record.content) {
            this.save(item.record, item.hash, vector);
          }
        });
      });
      this.learnDimensions(vectors[0]?.length);
    } finally {
      for (const item of todo) this.inFlight.delete(item.record.id);
    }
  }

  /** Embeds through the embedder, remembering a failure so the next success starts a catch-up backfill. */
  async embedCalled(
    texts: string[],
    options: { interactive?: boolean; signal?: AbortSignal } = {},
  ): Promise<Float32Array[]> {
    let vectors: Float32Array[];
    try {
      vectors = await this.embedder.embed(texts, options);
    } catch (error) {
      this.missedSome = true;
      throw error;
    }
    if (this.missedSome && !this.backfill) {
      this.missedSome = false;
      this.scheduleBackfill();
    }
    return vectors;
  }

  /** Records the dimension count seen in a model answer; a change starts re-embedding in the background. */
  learnDimensions(dimensions: number | undefined): void {
    if (dimensions === undefined || dimensions === this.dimensions) return;
    const first = this.dimensions === null;
    if (!first) {
      this.logger.warn(
        {
          code: "memory.dimensions_changed",
          from: this.dimensions,
          to: dimensions,
          model: this.embedder.model,
        },
        "Embedding dimensions changed; re-embedding stored memories in the background",
      );
    }
    this.dimensions = dimensions;
    this.scheduleBackfill();
  }

  /** Starts (or queues one more round of) background embedding of missing and stale vectors. */
  scheduleBackfill(): void {
    if (this.stopped) return;
    if (this.backfill) {
      this.backfillAgain = true;
      return;
    }
    this.backfill = this.runBackfill()
      .catch((error: unknown) => {
        this.logger.warn(
          { code: "memory.backfill_failed", err: error },
          "Background memory embedding stopped",
        );
      })
      .finally(() => {
        this.backfill = null;
        if (this.backfillAgain) {
          this.backfillAgain = false;
          this.scheduleBackfill();
        }
      });
  }

  /** Stops background embedding after the batch in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  /** Resolves when no background embedding is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.backfill) await this.backfill;
  }

  private async runBackfill(): Promise<void> {
    // Let the caller's turn go first.
    await new Promise((resolve) => setImmediate(resolve));
    let afterId = 0;
    while (!this.stopped) {
      const batch = this.repository.staleForEmbedding(
        this.embedder.model,
        this.dimensions,
        afterId,
        BACKFILL_BATCH,
      );
      if (batch.length === 0) return;
      afterId = batch[batch.length - 1]!.id;
      // Memories being embedded by a store call right now are left to that call.
      const todo = batch.filter((record) => !this.inFlight.has(record.id));
      try {
        if (todo.length > 0) await this.embedRecords(todo);
      } catch (error) {
        this.logger.warn(
          { code: "memory.embedding_failed", err: error, model: this.embedder.model },
          "Background memory embedding failed; will retry later. Recall uses keyword search for the affected memories.",
        );
        return;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private fits(dimensions: number): boolean {
    return this.dimensions === null || this.dimensions === dimensions;
  }

  private save(record: MemoryRecord, hash: string, vector: Float32Array): void {
    this.repository.saveVector(record.id, this.embedder.model, hash, vector);
    this.indexes.saved(record.agent, record.id, this.embedder.model, vector);
  }
}
