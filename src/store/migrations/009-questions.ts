import type { Migration } from "./index.js";

/** Questions asked in chat (`ask_question`): the other half of the approvals mechanism. */
export const questionsMigration: Migration = {
  version: 9,
  name: "questions: asked in chat, answered by a person",
  up: `
    CREATE TABLE questions (
      id TEXT PRIMARY KEY,
      session_key TEXT NOT NULL,
      channel TEXT NOT NULL,
      chat_id TEXT NOT NULL,
      asked_of TEXT NOT NULL,
      prompt TEXT NOT NULL,
      options TEXT NOT NULL,
      allow_custom INTEGER NOT NULL,
      status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'answered', 'timeout', 'cancelled', 'interrupted')),
      answer TEXT,
      option_id TEXT,
      answered_by TEXT,
      asked_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      answered_at INTEGER
    );
    CREATE INDEX questions_pending ON questions (session_key) WHERE status = 'pending';
  `,
};
