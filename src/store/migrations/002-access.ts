import type { Migration } from "./index.js";

export const accessMigration: Migration = {
  version: 2,
  name: "access: approved senders and pending pairing codes",
  up: `
    CREATE TABLE approved_senders (
      channel TEXT NOT NULL,
      user_id TEXT NOT NULL,
      user_name TEXT,
      approved_at INTEGER NOT NULL,
      approved_by TEXT NOT NULL,
      PRIMARY KEY (channel, user_id)
    );

    CREATE TABLE pairing_codes (
      code TEXT PRIMARY KEY,
      channel TEXT NOT NULL,
      user_id TEXT NOT NULL,
      user_name TEXT,
      chat_id TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      UNIQUE (channel, user_id)
    );
    CREATE INDEX pairing_codes_channel ON pairing_codes (channel, expires_at);
  `,
};
