import Database from "better-sqlite3";

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
 * release may have taken them from the platform (Telegram advances its offset) before it was stopped. Read from
 * the failed database before the snapshot replaces it; [] when it can't be read.
 */
export function unansweredSince(database: string, since: number): UnansweredMessage[] {
  try {
    const db = new Database(database, { fileMustExist: true });
    try {
      return db
        .prepare(
          `SELECT channel, message_id, session_key, payload, received_at FROM inbox
           WHERE received_at >= ? AND status IN ('pending', 'processing', 'interrupted') ORDER BY id`,
        )
        .all(since) as UnansweredMessage[];
    } finally {
      db.close();
    }
  } catch {
    return [];
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
