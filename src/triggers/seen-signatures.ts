import { createHash } from "node:crypto";
import type { Db } from "../store/database.js";

/** What became of a claim: the signature is now used, was used before, or there is no room left. */
export type SignatureClaim = "claimed" | "used" | "full";

/**
 * The webhook signatures already used, in SQLite (`webhook_signatures`, migration 027) so a restart doesn't forget
 * them: a captured request replayed after a restart, its timestamp still fresh, is refused like any other replay.
 * A row holds a SHA-256 of the MAC's bytes (never the MAC: a copy of the database hands out no signature), the
 * trigger that took it and the time it may go; rows past that time are pruned on every claim, so the table holds
 * only signatures that could still be fresh, and never more than `limit`.
 */
export class SeenSignatures {
  private readonly claimOnce: (
    trigger: string,
    hash: Buffer,
    expiresAt: number,
    now: number,
  ) => SignatureClaim;

  constructor(
    private readonly db: Db,
    private readonly limit: number,
  ) {
    const prune = db.prepare("DELETE FROM webhook_signatures WHERE expires_at < ?");
    const used = db.prepare("SELECT 1 FROM webhook_signatures WHERE mac_hash = ?").pluck();
    const count = db.prepare("SELECT count(*) FROM webhook_signatures").pluck();
    const insert = db.prepare(
      "INSERT INTO webhook_signatures (mac_hash, trigger, expires_at) VALUES (?, ?, ?)",
    );
    const claim = db.transaction((trigger: string, hash: Buffer, expiresAt: number, now: number) => {
      prune.run(now);
      if (used.get(hash) !== undefined) return "used";
      if (Number(count.get()) >= this.limit) return "full";
      insert.run(hash, trigger, expiresAt);
      return "claimed";
    });
    // IMMEDIATE: the write lock is taken before the look-up, so the look-up and the insert are one step.
    this.claimOnce = (...args) => claim.immediate(...args) as SignatureClaim;
  }

  /**
   * Marks `mac` used by `trigger` until `expiresAt` (committed before this returns), unless it was used before or
   * `limit` signatures are still live. Keyed on the MAC alone: one signature is used once, whichever trigger
   * shares its secret.
   */
  claim(trigger: string, mac: Buffer, expiresAt: number, now: number): SignatureClaim {
    return this.claimOnce(trigger, digest(mac), expiresAt, now);
  }

  /** Gives back a claim whose event was not taken (dropped, answered 429): the sender may send it again. */
  release(mac: Buffer): void {
    this.db.prepare("DELETE FROM webhook_signatures WHERE mac_hash = ?").run(digest(mac));
  }

  /** Rows held now, expired ones included until the next claim prunes them (tests and /metrics-like checks). */
  size(): number {
    return Number(this.db.prepare("SELECT count(*) FROM webhook_signatures").pluck().get());
  }
}

function digest(mac: Buffer): Buffer {
  return createHash("sha256").update(mac).digest();
}
