import fs from "node:fs";
import { z } from "zod";
import type { UntrustedSource } from "../core/turn-provenance.js";
import { parseJson } from "../lib/parse-json.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/index.js";
import { prepared } from "../store/prepared.js";
import { WritesInFlight } from "./writes-in-flight.js";

const sourcesSchema = z.array(
  z.object({
    kind: z.enum([
      "web",
      "mcp",
      "mail",
      "attachment",
      "quote",
      "trigger",
      "guest",
      "file",
      "memory",
      "history",
    ]),
    label: z.string(),
  }),
);
const fileRow = row(
  z.object({ sources: z.string(), size: z.number(), mtime_ms: z.number(), change_sig: z.string() }),
  "file_provenance",
);
const memoryRow = row(z.object({ key: z.string(), sources: z.string() }), "memory_provenance");

/**
 * What can't be put back by whoever changes a file: its device and inode (a file swapped for another) and its
 * status-change time in ns (moved by every write, chmod, rename or new hard link; `utimes` can set the mtime back,
 * not this). With the size and mtime this is the file as Magpie left it.
 */
function changeSignature(stats: fs.BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.ctimeNs}`;
}

const IN_FLIGHT = new WeakMap<Db, WritesInFlight>();

/** What Magpie knows about a file's origin. */
export type FileOrigin =
  /** Written by Magpie in an owner's untainted turn, unchanged since. */
  | { trusted: true }
  /** Written by a tainted turn (its sources), or not written by Magpie / changed since (no sources). */
  | { trusted: false; sources: UntrustedSource[] };

/**
 * The provenance of what Magpie writes (DESIGN.md → Security → "Untrusted content"): files (with the size and
 * modification time at the write, so a later change outside Magpie is noticed) and memories, each with the
 * untrusted sources of the turn that wrote it (`[]` for an owner's untainted turn). Migrations 032, 036.
 */
export class ProvenanceStore {
  /** The writes under way to what this database records (one per database, however many stores are made on it). */
  readonly inFlight: WritesInFlight;

  constructor(private readonly db: Db) {
    let inFlight = IN_FLIGHT.get(db);
    if (!inFlight) {
      inFlight = new WritesInFlight();
      IN_FLIGHT.set(db, inFlight);
    }
    this.inFlight = inFlight;
  }

  /** Records the file at `realPath` as just written by a turn holding `sources`. */
  recordFile(realPath: string, sources: readonly UntrustedSource[], now = Date.now()): void {
    let stats: fs.BigIntStats;
    try {
      stats = fs.statSync(realPath, { bigint: true });
    } catch {
      return;
    }
    prepared(
      this.db,
      `INSERT INTO file_provenance (path, sources, size, mtime_ms, change_sig, written_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (path) DO UPDATE SET sources = excluded.sources, size = excluded.size,
           mtime_ms = excluded.mtime_ms, change_sig = excluded.change_sig, written_at = excluded.written_at`,
    ).run(
      realPath,
      JSON.stringify(sources),
      Number(stats.size),
      Number(stats.mtimeNs / 1_000_000n),
      changeSignature(stats),
      now,
    );
  }

  /** Forgets a file Magpie deleted. */
  forgetFile(realPath: string): void {
    prepared(this.db, "DELETE FROM file_provenance WHERE path = ?").run(realPath);
  }

  /** Where the existing file at `realPath` came from, as far as Magpie's records say. */
  fileOrigin(realPath: string): FileOrigin {
    const stored = fileRow.one(
      prepared(this.db, "SELECT sources, size, mtime_ms, change_sig FROM file_provenance WHERE path = ?").get(
        realPath,
      ),
    );
    if (!stored) return { trusted: false, sources: [] };
    let stats: fs.BigIntStats;
    try {
      stats = fs.statSync(realPath, { bigint: true });
    } catch {
      return { trusted: false, sources: [] };
    }
    // Changed since Magpie wrote it (even with the mtime put back): what it holds now is not what the record vouches
    // for. A row from before migration 036 has no signature and matches nothing.
    if (
      Number(stats.size) !== stored.size ||
      Number(stats.mtimeNs / 1_000_000n) !== stored.mtime_ms ||
      changeSignature(stats) !== stored.change_sig
    )
      return { trusted: false, sources: [] };
    const sources = parseJson(stored.sources, sourcesSchema, `file_provenance of ${realPath}`);
    return sources.length === 0 ? { trusted: true } : { trusted: false, sources };
  }

  /** Records a memory stored by a turn holding `sources`; an untainted owner's store clears the record. */
  recordMemory(agent: string, key: string, sources: readonly UntrustedSource[], now = Date.now()): void {
    if (sources.length === 0) {
      this.forgetMemory(agent, key);
      return;
    }
    prepared(
      this.db,
      `INSERT INTO memory_provenance (agent, key, sources, stored_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (agent, key) DO UPDATE SET sources = excluded.sources, stored_at = excluded.stored_at`,
    ).run(agent, key, JSON.stringify(sources), now);
  }

  forgetMemory(agent: string, key: string): void {
    prepared(this.db, "DELETE FROM memory_provenance WHERE agent = ? AND key = ?").run(agent, key);
  }

  /** The memories of `agent` stored by tainted turns, by key, with their turns' sources. */
  taintedMemories(agent: string): Map<string, UntrustedSource[]> {
    const rows = memoryRow.all(
      prepared(this.db, "SELECT key, sources FROM memory_provenance WHERE agent = ?").all(agent),
    );
    return new Map(
      rows.map((stored) => [
        stored.key,
        parseJson(stored.sources, sourcesSchema, `memory_provenance of ${stored.key}`),
      ]),
    );
  }
}
