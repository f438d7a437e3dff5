import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { quoteTerm } from "./fts-query.js";

const scoredRows = row(z.object({ id: z.number(), bm25: z.number() }), "keyword-search");

/**
 * Postings (term occurrences in memories) one search may touch. FTS5 matching is cheap, but bm25() costs
 * about a microsecond per posting of every scored term (it also scans each term's whole posting list for
 * its IDF), so a term found in tens of thousands of memories would cost tens of milliseconds.
 */
const POSTING_BUDGET = 2000;
/** Terms whose document frequency is kept (cleared past this). */
const FREQUENCIES_KEPT = 4096;
/** Postings whose BM25 contribution is kept, over all terms (cleared past this). */
const CONTRIBUTIONS_KEPT = 100_000;

/**
 * Keyword search with a bounded cost, whatever the store's size: each term's document frequency is probed
 * up to its share of the budget; selective terms are ranked by BM25 (key weighted 2×, content 1×), and terms
 * too common to select anything are left out. When every term is that common, the newest memories
 * containing all of them (else any of them) are returned instead, newest first.
 */
export class KeywordSearch {
  private readonly probe: Statement;
  private readonly structure: Statement;
  /** The index's structure record the kept frequencies were probed under (null: nothing kept). */
  private probedUnder: Buffer | null = null;
  /** Each term's probed frequency: `count` rows came back for a probe of at most `limit`. */
  private readonly frequencies = new Map<string, { count: number; limit: number }>();
  /** Each selective term's BM25 contribution per memory, kept with the frequencies (same structure record). */
  private readonly contributions = new Map<string, ReadonlyArray<readonly [number, number]>>();
  private contributionCount = 0;
  private readonly termScores: Statement;
  private readonly ofAgent: Statement;
  private readonly ranked: Statement;
  private readonly newest: Statement;

  // CROSS JOIN keeps the FTS results as the outer loop; otherwise the planner may walk every memory of
  // the agent (by index) and look each one up in the FTS results.
  constructor(private readonly db: Db) {
    // FTS5's structure record (id 10 of its data table) changes with every write to the index, from any connection
    // or process; a write still pending inside an open transaction is not in it yet (no frequency is kept then).
    this.structure = db.prepare("SELECT block FROM memories_fts_data WHERE id = 10").pluck();
    // Counted in SQLite: a common term's probe handed up to its share of the budget (hundreds) of row ids to JS.
    this.probe = db
      .prepare("SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)")
      .pluck();
    this.termScores = db.prepare(
      "SELECT rowid AS id, bm25(memories_fts, 2.0, 1.0) AS bm25 FROM memories_fts WHERE memories_fts MATCH ?",
    );
    this.ofAgent = db
      .prepare("SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND agent = ?")
      .pluck();
    this.ranked = db.prepare(
      `SELECT m.id AS id, f.score AS bm25 FROM (
         SELECT rowid, bm25(memories_fts, 2.0, 1.0) AS score FROM memories_fts
         WHERE memories_fts MATCH ? ORDER BY score LIMIT ?
       ) f CROSS JOIN memories m ON m.id = f.rowid
       WHERE m.agent = ? ORDER BY f.score`,
    );
    this.newest = db.prepare(
      `SELECT m.id AS id, 0 AS bm25 FROM (
         SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?
       ) f CROSS JOIN memories m ON m.id = f.rowid
       WHERE m.agent = ? ORDER BY m.id DESC`,
    );
  }

  /** Best first; `terms` are sanitized words (letters, digits, '_'). Over-fetches to allow for other agents. */
  search(agent: string, terms: string[], limit: number): Array<{ id: number; bm25: number }> {
    if (terms.length === 0) return [];
    const fetch = limit * 4;
    const share = Math.floor(POSTING_BUDGET / terms.length);
    const kept = this.keptFrequencies();
    const frequency = new Map(terms.map((term) => [term, this.frequency(term, share + 1, kept)]));
    const present = terms.filter((term) => frequency.get(term)! > 0);
    if (present.length === 0) return [];
    const selective = present.filter((term) => frequency.get(term)! <= share);
    if (selective.length > 0) {
      if (kept) return this.rankedFromKept(selective, fetch, agent, limit);
      return this.rows(this.ranked, selective.map(quoteTerm).join(" OR "), fetch, agent, limit);
    }
    // A term found nowhere makes the AND empty: FTS5 still walks the other terms' postings to learn that
    // (1.3 ms at 55,000 memories, every turn whose text holds a new word), so it is not asked.
    const hits =
      present.length > 1 && present.length === terms.length
        ? this.rows(this.newest, terms.map(quoteTerm).join(" AND "), fetch, agent, limit)
        : [];
    if (hits.length >= limit) return hits;
    const seen = new Set(hits.map((hit) => hit.id));
    const more = this.rows(this.newest, present.map(quoteTerm).join(" OR "), fetch, agent, limit);
    return [...hits, ...more.filter((hit) => !seen.has(hit.id))].slice(0, limit);
  }

  /**
   * The frequencies kept from earlier searches while the index is unchanged, else none (issue 35, hot path): every
   * turn recalls, and the probes of a message's common words — each walks up to its share of the posting budget —
   * were most of a recall's cost, asked again of an index no write had touched.
   */
  private keptFrequencies(): Map<string, { count: number; limit: number }> | null {
    if (this.db.inTransaction) return null;
    const structure = this.structure.get();
    if (!Buffer.isBuffer(structure)) return null;
    if (!this.probedUnder?.equals(structure)) {
      this.frequencies.clear();
      this.contributions.clear();
      this.contributionCount = 0;
      this.probedUnder = structure;
    }
    return this.frequencies;
  }

  /** `min(document frequency, limit)`: what a probe of at most `limit` rows returns, from `kept` when it tells. */
  private frequency(
    term: string,
    limit: number,
    kept: Map<string, { count: number; limit: number }> | null,
  ): number {
    const known = kept?.get(term);
    // Exact when fewer than its limit came back; a floor otherwise, enough for a limit no higher.
    if (known && (known.count < known.limit || limit <= known.limit)) return Math.min(known.count, limit);
    const count = Number(this.probe.get(quoteTerm(term), limit));
    if (kept) {
      if (kept.size >= FREQUENCIES_KEPT) kept.clear();
      kept.set(term, { count, limit });
    }
    return count;
  }

  /**
   * The ranked query's result from each term's kept BM25 contributions (issue 35, hot path: scoring every posting of
   * a message's selective terms was the largest part of a turn's recall, for terms the chat uses again and again).
   * FTS5's `bm25()` of an OR query is, per row, the sum over its terms of each term's own score (its IDF times its
   * weighted frequency in the row, over the row's length against the average), negated: a single-term query's
   * `bm25()` is that term's part, and summing them in the query's term order gives the same double. The best `fetch`
   * are taken before the agent's are kept, as the SQL does; equal scores go by id.
   */
  private rankedFromKept(
    terms: string[],
    fetch: number,
    agent: string,
    limit: number,
  ): Array<{ id: number; bm25: number }> {
    const scores = new Map<number, number>();
    for (const term of terms)
      for (const [id, score] of this.contributionsOf(term)) scores.set(id, (scores.get(id) ?? 0) + score);
    const best = [...scores].sort((a, b) => a[1] - b[1] || a[0] - b[0]).slice(0, fetch);
    if (best.length === 0) return [];
    const mine = new Set<unknown>(this.ofAgent.all(JSON.stringify(best.map(([id]) => id)), agent));
    return best
      .filter(([id]) => mine.has(id))
      .slice(0, limit)
      .map(([id, bm25]) => ({ id, bm25 }));
  }

  /** A term's BM25 part in each memory that holds it (kept while the index's structure record is unchanged). */
  private contributionsOf(term: string): ReadonlyArray<readonly [number, number]> {
    const known = this.contributions.get(term);
    if (known) return known;
    const rows = scoredRows
      .all(this.termScores.all(quoteTerm(term)))
      .map((row) => [row.id, row.bm25] as const);
    if (this.contributionCount + rows.length > CONTRIBUTIONS_KEPT) {
      this.contributions.clear();
      this.contributionCount = 0;
    }
    this.contributions.set(term, rows);
    this.contributionCount += rows.length;
    return rows;
  }

  private rows(
    statement: Statement,
    expression: string,
    fetch: number,
    agent: string,
    limit: number,
  ): Array<{ id: number; bm25: number }> {
    return scoredRows.all(statement.all(expression, fetch, agent)).slice(0, limit);
  }
}
