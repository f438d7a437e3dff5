import type { Migration } from "./index.js";

/**
 * Memory privacy: each memory records who may see it (every existing one is the owners'), and the sessions
 * in which a guest had a turn are remembered, so their compaction summaries never become owners' memories.
 */
export const memoryVisibilityMigration: Migration = {
  version: 7,
  name: "memory: audience of each memory, sessions guests took part in",
  up: `
    ALTER TABLE memories ADD COLUMN audience TEXT NOT NULL DEFAULT 'owners' CHECK (audience IN ('owners'));
    CREATE TABLE memory_guest_sessions (
      session_key TEXT PRIMARY KEY,
      first_seen_at INTEGER NOT NULL
    );
  `,
};
