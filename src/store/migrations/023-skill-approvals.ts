import type { Migration } from "./index.js";

/**
 * Pinned skills (`skills.requireApproval`): the content hash an owner approved for each skill name. A skill whose
 * folder no longer hashes to its row is "changed — not loaded" until approved again.
 */
export const skillApprovalsMigration: Migration = {
  version: 23,
  name: "skills: approved content hashes",
  up: `
    CREATE TABLE skill_approvals (
      name TEXT PRIMARY KEY COLLATE NOCASE,
      hash TEXT NOT NULL,
      file TEXT NOT NULL,
      approved_by TEXT NOT NULL,
      approved_at INTEGER NOT NULL
    );
  `,
};
