import type { Migration } from "./index.js";

/**
 * Where files Magpie writes and memories it stores came from (DESIGN.md → Security → "Untrusted content"): the
 * untrusted sources of the turn that wrote them as JSON (`[]` for an owner's untainted turn). A file's row holds
 * its size and modification time at the write, so a file changed since (outside Magpie) no longer matches it
 * and counts as untrusted again.
 */
export const provenanceMigration: Migration = {
  version: 32,
  name: "security: provenance of written files and stored memories",
  up: `
    CREATE TABLE file_provenance (
      path TEXT PRIMARY KEY,
      sources TEXT NOT NULL,
      size INTEGER NOT NULL,
      mtime_ms INTEGER NOT NULL,
      written_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE memory_provenance (
      agent TEXT NOT NULL,
      key TEXT NOT NULL,
      sources TEXT NOT NULL,
      stored_at INTEGER NOT NULL,
      PRIMARY KEY (agent, key)
    ) WITHOUT ROWID;
  `,
};
