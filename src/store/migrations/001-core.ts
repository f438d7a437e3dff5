import type { Migration } from "./index.js";

export const coreMigration: Migration = {
  version: 1,
  name: "core: inbox, outbox, sessions, messages, audit, kv",
  up: `
    CREATE TABLE inbox (
      id INTEGER PRIMARY KEY,
      channel TEXT NOT NULL,
      message_id TEXT NOT NULL,
      session_key TEXT NOT NULL,
      payload TEXT NOT NULL,
      status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'processing', 'done', 'interrupted', 'failed')),
      received_at INTEGER NOT NULL,
      started_at INTEGER,
      finished_at INTEGER,
      UNIQUE (channel, message_id)
    );
    CREATE INDEX inbox_open ON inbox (status, id) WHERE status IN ('pending', 'processing');

    CREATE TABLE outbox (
      id INTEGER PRIMARY KEY,
      channel TEXT NOT NULL,
      chat_id TEXT NOT NULL,
      thread_id TEXT,
      reply_to_message_id TEXT,
      payload TEXT NOT NULL,
      origin TEXT NOT NULL DEFAULT 'reply',
      inbox_id INTEGER REFERENCES inbox (id) ON DELETE SET NULL,
      status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
      attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_at INTEGER NOT NULL,
      parts_sent INTEGER NOT NULL DEFAULT 0,
      platform_message_ids TEXT NOT NULL DEFAULT '[]',
      last_error TEXT,
      created_at INTEGER NOT NULL,
      sent_at INTEGER
    );
    CREATE INDEX outbox_pending ON outbox (next_attempt_at) WHERE status = 'pending';

    CREATE TABLE sessions (
      key TEXT PRIMARY KEY,
      agent TEXT NOT NULL,
      summary TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );

    CREATE TABLE messages (
      id INTEGER PRIMARY KEY,
      session_key TEXT NOT NULL REFERENCES sessions (key) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
      content TEXT,
      tool_calls TEXT,
      tool_call_id TEXT,
      tokens INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX messages_session ON messages (session_key, id);

    CREATE TABLE audit (
      id INTEGER PRIMARY KEY,
      at INTEGER NOT NULL,
      session_key TEXT,
      agent TEXT,
      tool TEXT NOT NULL,
      arguments TEXT NOT NULL,
      verdict TEXT NOT NULL,
      outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'denied')),
      error_code TEXT,
      duration_ms INTEGER NOT NULL,
      result_excerpt TEXT
    );
    CREATE INDEX audit_at ON audit (at);

    CREATE TABLE kv (
      key TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    );
  `,
};
