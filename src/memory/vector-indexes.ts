import type { MemoryRepository } from "./memory-repository.js";
import { SignCodeIndex } from "./vector-index.js";

/**
 * The in-memory sign-code indexes, one per (agent, model, dimensions), built lazily from SQLite on the
 * first vector search and kept current as vectors are saved and memories forgotten.
 */
export class VectorIndexes {
  private readonly indexes = new Map<string, { agent: string; model: string; index: SignCodeIndex }>();

  constructor(private readonly repository: MemoryRepository) {}

  /** The index of `agent` for `model` vectors of `dimensions`, built on first use. */
  get(agent: string, model: string, dimensions: number): SignCodeIndex {
    const name = `${agent}\u0000${model}\u0000${dimensions}`;
    let entry = this.indexes.get(name);
    if (!entry) {
      const index = new SignCodeIndex(dimensions);
      for (const { memoryId, vector } of this.repository.agentVectors(agent, model, dimensions)) {
        index.set(memoryId, vector);
      }
      entry = { agent, model, index };
      this.indexes.set(name, entry);
    }
    return entry.index;
  }

  /** A vector was saved for `memoryId`: it joins the matching index and leaves the others. */
  saved(agent: string, memoryId: number, model: string, vector: Float32Array): void {
    for (const entry of this.indexes.values()) {
      if (entry.agent !== agent) continue;
      if (entry.model === model && entry.index.dimensions === vector.length)
        entry.index.set(memoryId, vector);
      else entry.index.delete(memoryId);
    }
  }

  /** The memory was forgotten or its text changed (its vector is gone). */
  removed(agent: string, memoryId: number): void {
    for (const entry of this.indexes.values()) if (entry.agent === agent) entry.index.delete(memoryId);
  }
}
