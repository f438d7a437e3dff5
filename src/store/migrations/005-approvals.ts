import type { Migration } from "./index.js";

export const approvalsMigration: Migration = {
  version: 5,
  name: "approvals: requests and decisions",
  up: `
    CREATE TABLE approvals (
      id TEXT PRIMARY KEY,
      session_key TEXT NOT NULL,
      channel TEXT NOT NULL,
      chat_id TEXT NOT NULL,
      tool TEXT NOT NULL,
      action TEXT NOT NULL,
      reason TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'denied', 'timeout', 'cancelled')),
      requested_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      decided_at INTEGER,
      decided_by TEXT
    );
    CREATE INDEX approvals_pending ON approvals (status) WHERE status = 'pending';
  `,
};
