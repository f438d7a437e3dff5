import { createHash } from "node:crypto";
import { z } from "zod";
import type { KvRepository } from "../store/kv.js";

/** kv rows `triggers.mqtt_retained.<trigger>`: that trigger's last handled retained message per topic. */
const KEY_PREFIX = "triggers.mqtt_retained.";
/** Topics remembered per trigger (the most recently changed ones); a `#`-wide trigger can't grow the row forever. */
const TOPICS_KEPT = 500;

const rowSchema = z.array(z.tuple([z.string(), z.string()]));

/**
 * The retained MQTT message each trigger last handled on each topic, kept in SQLite (kv). A broker sends a topic's
 * retained message again on every (re)subscribe — after each restart of Magpie, after a broker restart — and a
 * publisher may repeat it unchanged; it is the same state, so its action runs once. A changed one is handled.
 */
export class RetainedLedger {
  private readonly cache = new Map<string, Map<string, string>>();

  constructor(private readonly kv: KvRepository) {}

  /**
   * True when `trigger` has not handled this retained `payload` on `topic` as its last one there — it is
   * remembered now, before the action runs (a crash mid-action never runs it twice); false for a repeat.
   */
  take(trigger: string, topic: string, payload: Buffer): boolean {
    const digest = createHash("sha256").update(payload).digest("base64");
    const seen = this.load(trigger);
    if (seen.get(topic) === digest) return false;
    seen.delete(topic);
    seen.set(topic, digest);
    for (const oldest of seen.keys()) {
      if (seen.size <= TOPICS_KEPT) break;
      seen.delete(oldest);
    }
    this.kv.set(KEY_PREFIX + trigger, [...seen]);
    return true;
  }

  /** Drops what a removed trigger handled (a new trigger of that name starts afresh). */
  forget(trigger: string): void {
    this.cache.delete(trigger);
    this.kv.delete(KEY_PREFIX + trigger);
  }

  private load(trigger: string): Map<string, string> {
    let seen = this.cache.get(trigger);
    if (!seen) {
      const parsed = rowSchema.safeParse(this.kv.get(KEY_PREFIX + trigger, z.unknown()));
      seen = new Map(parsed.success ? parsed.data : []);
      this.cache.set(trigger, seen);
    }
    return seen;
  }
}
