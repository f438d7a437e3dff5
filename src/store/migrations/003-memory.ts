import type { Migration } from "./index.js";

/**
 * Long-term memory: one row per (agent, key), an external-content FTS5 index kept in sync by triggers,
 * and one embedding per memory (Float32 BLOB) tagged with the model, dimensions and content hash it came from.
 */
export const memoryMigration: Migration = {
  version: 3,
  name: "memory: memories, FTS5 index, embeddings",
  up: `
    CREATE TABLE memories (
      id INTEGER PRIMARY KEY,
      agent TEXT NOT NULL,
      key TEXT NOT NULL,
      content TEXT NOT NULL,
      category TEXT NOT NULL DEFAULT 'core' CHECK (category IN ('core', 'daily', 'conversation')),
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      access_count INTEGER NOT NULL DEFAULT 0,
      last_accessed_at INTEGER,
      UNIQUE (agent, key)
    );
    CREATE INDEX memories_agent_category ON memories (agent, category, updated_at);

    CREATE VIRTUAL TABLE memories_fts USING fts5(
      key, content,
      content = 'memories', content_rowid = 'id',
      tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
      INSERT INTO memories_fts (rowid, key, content) VALUES (new.id, new.key, new.content);
    END;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
      INSERT INTO memories_fts (memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
    END;
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF key, content ON memories BEGIN
      INSERT INTO memories_fts (memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
      INSERT INTO memories_fts (rowid, key, content) VALUES (new.id, new.key, new.content);
    END;

    CREATE TABLE memory_vectors (
      memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
      model TEXT NOT NULL,
      dimensions INTEGER NOT NULL,
      content_hash TEXT NOT NULL,
      vector BLOB NOT NULL
    );
    CREATE INDEX memory_vectors_hash ON memory_vectors (model, content_hash);
  `,
};
