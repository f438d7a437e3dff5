import type { Migration } from "./index.js";

/**
 * The step journal of running turns (DESIGN.md → Durable turns): each completed step — the LLM's answer with its
 * tool calls, a call about to run, a call's result — is one row, written before the next step starts. A turn
 * cut off by a crash resumes from its rows; they go when the turn's reply is stored.
 */
export const stepJournalMigration: Migration = {
  version: 28,
  name: "core: step journal of running turns",
  up: `
    CREATE TABLE turn_steps (
      turn_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      kind TEXT NOT NULL,
      call_id TEXT,
      body TEXT NOT NULL,
      at INTEGER NOT NULL,
      PRIMARY KEY (turn_id, seq)
    ) WITHOUT ROWID;
  `,
};
