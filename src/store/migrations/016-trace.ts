import type { Migration } from "./index.js";

/**
 * Every message has an outcome (DESIGN.md → Message flow): `inbox.outcome` beside the status (which keeps its
 * meaning for recovery), and `trace_events`, what `magpie trace` reads besides the inbox, outbox, audit and
 * ledger — written from the core's events, keyed by inbox id, turn id and the platform's message, pruned with
 * the inbox. Refused messages live here only, as metadata (never a stranger's text).
 */
export const traceMigration: Migration = {
  version: 16,
  name: "trace: inbox outcome, trace_events",
  up: `
    ALTER TABLE inbox ADD COLUMN outcome TEXT
      CHECK (outcome IN ('answered', 'failed', 'interrupted', 'refused', 'undeliverable'));
    ALTER TABLE inbox ADD COLUMN outcome_cause TEXT;

    CREATE TABLE trace_events (
      id INTEGER PRIMARY KEY,
      at INTEGER NOT NULL,
      kind TEXT NOT NULL,
      inbox_id INTEGER,
      turn_id TEXT,
      outbox_id INTEGER,
      channel TEXT,
      chat_id TEXT,
      message_id TEXT,
      data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX trace_events_at ON trace_events (at);
    CREATE INDEX trace_events_inbox ON trace_events (inbox_id) WHERE inbox_id IS NOT NULL;
    CREATE INDEX trace_events_turn ON trace_events (turn_id) WHERE turn_id IS NOT NULL;
    CREATE INDEX trace_events_outbox ON trace_events (outbox_id) WHERE outbox_id IS NOT NULL;
    CREATE INDEX trace_events_message ON trace_events (channel, chat_id, message_id);
  `,
};
