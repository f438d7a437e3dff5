import type { MatchKind, MemoryRecord } from "./types.js";

/** Reciprocal rank fusion constant: damps the gap between the first ranks (the usual value). */
const RRF_K = 60;
/**
 * When both lists exist, a keyword-only match (a shared word, no shared meaning) counts less than the top
 * semantic match; the vector term also scales with cosine relative to the best one, so a weak semantic
 * neighbour that merely shares a word doesn't outrank a strong one.
 */
const KEYWORD_WEIGHT = 0.7;
const CORE_BOOST = 1.25;
const DAY_MS = 86_400_000;
/** Days after which a daily/conversation memory has lost half of its recency weight. */
const HALF_LIFE_DAYS: Record<"daily" | "conversation", number> = { daily: 14, conversation: 30 };

export interface FusedCandidate {
  id: number;
  rrf: number;
  keywordRank?: number;
  vectorRank?: number;
  similarity?: number;
}

/** Merges keyword and vector result lists (best first) by weighted reciprocal rank fusion. */
export function fuseRanks(
  keywordIds: number[],
  vectorHits: Array<{ id: number; similarity: number }>,
): FusedCandidate[] {
  const fused = new Map<number, FusedCandidate>();
  const entry = (id: number): FusedCandidate => {
    let candidate = fused.get(id);
    if (!candidate) {
      candidate = { id, rrf: 0 };
      fused.set(id, candidate);
    }
    return candidate;
  };
  const keywordWeight = vectorHits.length > 0 ? KEYWORD_WEIGHT : 1;
  keywordIds.forEach((id, index) => {
    const candidate = entry(id);
    candidate.keywordRank = index + 1;
    candidate.rrf += keywordWeight / (RRF_K + index + 1);
  });
  const best = vectorHits[0]?.similarity ?? 1;
  vectorHits.forEach((hit, index) => {
    const candidate = entry(hit.id);
    candidate.vectorRank = index + 1;
    candidate.similarity = hit.similarity;
    candidate.rrf += (best > 0 ? hit.similarity / best : 1) / (RRF_K + index + 1);
  });
  return [...fused.values()];
}

/**
 * Weight by category: core memories get a boost; daily and conversation memories fade with age
 * (never below half, so an old but exact match still beats a fresh vague one).
 */
export function categoryWeight(memory: MemoryRecord, now: number): { factor: number; note: string } {
  if (memory.category === "core") return { factor: CORE_BOOST, note: `core ×${CORE_BOOST}` };
  const ageDays = Math.max(0, now - memory.updatedAt) / DAY_MS;
  const factor = 0.5 + 0.5 * 0.5 ** (ageDays / HALF_LIFE_DAYS[memory.category]);
  return { factor, note: `recency ×${factor.toFixed(2)} (${Math.floor(ageDays)} d old)` };
}

/** Why a candidate matched, in words. */
export function describeMatch(
  candidate: FusedCandidate,
  weightNote: string,
): { matchedBy: MatchKind[]; why: string } {
  const matchedBy: MatchKind[] = [];
  const parts: string[] = [];
  if (candidate.keywordRank !== undefined) {
    matchedBy.push("keyword");
    parts.push(`keyword rank ${candidate.keywordRank}`);
  }
  if (candidate.vectorRank !== undefined) {
    matchedBy.push("vector");
    parts.push(`semantic rank ${candidate.vectorRank} (cosine ${candidate.similarity?.toFixed(2)})`);
  }
  parts.push(weightNote);
  return { matchedBy, why: parts.join("; ") };
}
