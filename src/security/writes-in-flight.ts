import type { TurnProvenance, UntrustedSource } from "../core/turn-provenance.js";

/**
 * Turns writing the same file or memory at the same time (an owner's chat turn and a job's, two chats of one
 * owner). A write's provenance record is made after the write — a stat of the file as it is then — so without
 * this, an owner's untainted turn could record, after its own write, a file that a tainted turn had written in
 * between, and vouch for the tainted turn's bytes (its record landing after the tainted turn's own). So a record
 * names the sources of every turn with a write to the same target in flight meanwhile: what two turns wrote at
 * once counts as the more tainted one's. One per database (the files and memories it records).
 */
export class WritesInFlight {
  private readonly targets = new Map<string, { calls: number; turns: Set<TurnProvenance> }>();

  /**
   * Marks `keys` (see `fileKey`, `memoryKey`) as being written by a call of `turn`, before the call runs; the
   * function returned ends that, after the call's record is made.
   */
  begin(keys: readonly string[], turn: TurnProvenance): () => void {
    if (keys.length === 0) return () => {};
    for (const key of keys) {
      const entry = this.targets.get(key) ?? { calls: 0, turns: new Set<TurnProvenance>() };
      entry.calls += 1;
      entry.turns.add(turn);
      this.targets.set(key, entry);
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      for (const key of keys) {
        const entry = this.targets.get(key);
        if (!entry) continue;
        entry.calls -= 1;
        if (entry.calls <= 0) this.targets.delete(key);
      }
    };
  }

  /**
   * The sources a record of `key` made by `turn` carries: its own (unless `own` is false: a delete leaves none of
   * its own), then those of every other turn writing it.
   */
  sourcesOf(key: string, turn: TurnProvenance, own = true): UntrustedSource[] {
    const sources = own ? [...turn.sources] : [];
    const entry = this.targets.get(key);
    if (!entry) return sources;
    for (const other of entry.turns) {
      if (other === turn) continue;
      for (const source of other.sources)
        if (!sources.some((known) => known.kind === source.kind && known.label === source.label))
          sources.push(source);
    }
    return sources;
  }
}

export const fileKey = (realPath: string): string => `file\0${realPath}`;
export const memoryKey = (agent: string, key: string): string => `memory\0${agent}\0${key}`;
