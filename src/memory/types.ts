import type { MemoryAudience } from "./memory-access.js";

/** Shapes shared by the memory store, recall and its callers (tools, commands, CLI). */

export const MEMORY_CATEGORIES = ["core", "daily", "conversation"] as const;

/** `core`: lasting facts and preferences; `daily`: notes of the day; `conversation`: compacted chat summaries. */
export type MemoryCategory = (typeof MEMORY_CATEGORIES)[number];

export interface MemoryRecord {
  id: number;
  agent: string;
  key: string;
  content: string;
  category: MemoryCategory;
  /** Who may see it: "owners" (every memory today; guests' turns store none). */
  audience: MemoryAudience;
  createdAt: number;
  updatedAt: number;
  accessCount: number;
  lastAccessedAt: number | null;
}

/** How a memory matched a query. */
export type MatchKind = "keyword" | "vector";

export interface RecallHit {
  memory: MemoryRecord;
  /** Fused score after category boost and recency decay (higher is better). */
  score: number;
  matchedBy: MatchKind[];
  /** Human-readable reason, e.g. "keyword rank 1; semantic rank 3 (cosine 0.81); core ×1.25". */
  why: string;
}

export interface RecallResult {
  hits: RecallHit[];
  /** "hybrid" when vector search took part, else "keyword" (no embeddings configured, or the call failed). */
  mode: "hybrid" | "keyword";
  /** Why vector search was skipped, when it was configured but failed. */
  fallbackReason?: string;
}
