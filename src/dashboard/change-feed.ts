import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "../store/database.js";

const records = row(z.record(z.string(), z.unknown()), "dashboard change fingerprint");

/** How often an open page's event stream looks for changes (one small aggregate query). */
const POLL_MS = 1_000;

/**
 * A fingerprint of what the pages show: a new audit row or chat message, a cron run starting or finishing, a job
 * paused or removed, an approval or question asked or settled, a memory changed. Other processes (`magpie cron run`) change the same database, so
 * the database itself is watched rather than in-process events.
 */
export function changeFingerprint(db: Db): string {
  const row = records.only(
    db
      .prepare(
        `SELECT
        (SELECT COALESCE(MAX(id), 0) FROM audit) AS audit,
        (SELECT COUNT(*) || ':' || COALESCE(MAX(id), 0) || ':' || COUNT(finished_at) FROM cron_runs) AS runs,
        (SELECT COUNT(*) || ':' || SUM(enabled) || ':' || COALESCE(SUM(next_run_at), 0) FROM cron_jobs) AS jobs,
        (SELECT COUNT(*) || ':' || SUM(status = 'pending') FROM approvals) AS approvals,
        (SELECT COUNT(*) || ':' || SUM(status = 'pending') FROM questions) AS questions,
        (SELECT COUNT(*) || ':' || COALESCE(MAX(updated_at), 0) FROM memories) AS memories,
        (SELECT COALESCE(MAX(id), 0) FROM messages) AS messages,
        (SELECT COALESCE(SUM(updated_at), 0) FROM kv WHERE key LIKE 'web:transcript:%') AS webchat`,
      )
      .get(),
  );
  return Object.values(row).join("|");
}

/** `GET /ui/events`: server-sent `changed` events while a page is open; the page then refreshes its parts. */
export class ChangeFeed {
  private readonly open = new Set<() => void>();
  private stopped = false;

  constructor(private readonly db: Db) {}

  stream(c: Context): Response {
    return streamSSE(c, async (stream) => {
      const end = () => stream.abort();
      this.open.add(end);
      try {
        let last = changeFingerprint(this.db);
        await stream.writeSSE({ event: "ready", data: "" });
        while (!this.stopped && !stream.aborted && !stream.closed) {
          await stream.sleep(POLL_MS);
          if (this.stopped || stream.aborted) break;
          const current = changeFingerprint(this.db);
          if (current === last) continue;
          last = current;
          await stream.writeSSE({ event: "changed", data: "" });
        }
      } finally {
        this.open.delete(end);
      }
    });
  }

  /** Ends every open stream: the app stops (the HTTP server would otherwise wait for them). */
  stop(): void {
    this.stopped = true;
    for (const end of this.open) end();
    this.open.clear();
  }
}

/**
 * The page's side: turns each `changed` event into an htmx `magpie:changed` event on the body — and `ready` too,
 * since a change between the page's render and the stream's (re)connection would otherwise never show (a reply
 * that arrived while the owner switched pages stayed missing until the next change).
 */
export const LIVE_SCRIPT = `(() => {
  const events = new EventSource("/ui/events");
  const refresh = () => htmx.trigger(document.body, "magpie:changed");
  events.addEventListener("changed", refresh);
  events.addEventListener("ready", refresh);
})();
`;
