import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";

const unansweredMessages = row(
  z.object({
    channel: z.string(),
    message_id: z.string(),
    session_key: z.string(),
    payload: z.string(),
    received_at: z.number(),
  }),
  "inbox unanswered",
);

/** An inbound message the failed release took in and did not answer. */
export interface UnansweredMessage {
  channel: string;
  message_id: string;
  session_key: string;
  payload: string;
  received_at: number;
}

/**
 * The messages that reached the database since `since` (the snapshot) and were never answered there — a failed
 * release may have taken them from the platform (Telegram advances its offset) before it was stopped. Read from a
 * scratch copy of the failed database's files (`kept`: the directory they were moved aside to), so the kept files
 * stay exactly as the failed release left them; [] when the copy can't be read (a damaged database).
 */
export function unansweredSince(kept: string, since: number): UnansweredMessage[] {
  let scratch: string | null = null;
  try {
    scratch = mkdtempSync(path.join(path.dirname(kept), ".carry-over-"));
    for (const name of ["magpie.db", "magpie.db-wal"]) {
      if (existsSync(path.join(kept, name))) copyFileSync(path.join(kept, name), path.join(scratch, name));
    }
    const db = new Database(path.join(scratch, "magpie.db"), { fileMustExist: true });
    try {
      // A damaged file is read defensively: no code from its schema runs, malformed cells are caught.
      db.pragma("trusted_schema = OFF");
      db.pragma("cell_size_check = ON");
      return unansweredMessages.all(
        db
          .prepare(
            `SELECT channel, message_id, session_key, payload, received_at FROM inbox
           WHERE received_at >= ? AND status IN ('pending', 'processing', 'interrupted') ORDER BY id`,
          )
          .all(since),
      );
    } finally {
      db.close();
    }
  } catch {
    return [];
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

/** Queues them in the restored database (columns every release has since migration 001); the next start answers them. */
export function carryOver(database: string, messages: UnansweredMessage[]): number {
  if (messages.length === 0) return 0;
  const db = new Database(database, { fileMustExist: true });
  try {
    const insert = db.prepare(
      `INSERT OR IGNORE INTO inbox (channel, message_id, session_key, payload, status, received_at)
       VALUES (?, ?, ?, ?, 'pending', ?)`,
    );
    let added = 0;
    db.transaction(() => {
      for (const message of messages) {
        added += insert.run(
          message.channel,
          message.message_id,
          message.session_key,
          message.payload,
          message.received_at,
        ).changes;
      }
    })();
    return added;
  } finally {
    db.close();
  }
}
