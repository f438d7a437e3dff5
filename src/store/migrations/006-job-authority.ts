import type Database from "better-sqlite3";
import type { Migration } from "./index.js";

interface LegacyJob {
  id: number;
  source: "chat" | "config" | "cli";
  created_by: string | null;
  created_at: number;
  agent: string | null;
}

/** The chat a session key names (`<channel>:<chatId>[:<threadId>]`), as `targetOfSessionKey` reads it. */
function chatOfSessionKey(sessionKey: string): { channel: string; chatId: string; threadId?: string } {
  const [channel = "", chatId = "", ...rest] = sessionKey.split(":");
  return rest.length > 0 ? { channel, chatId, threadId: rest.join(":") } : { channel, chatId };
}

/**
 * Jobs record their creator (DESIGN.md → Security → "Jobs carry their creator's authority"): identity, agent,
 * the creating turn's tool names and the chat it was made from. Jobs from before count as the owner's: a chat
 * job's creator is whoever wrote last in its session before it was made (else the owner of that channel),
 * config and CLI jobs are the local owner's. Their tool names stay unknown (NULL: limited by the job's own
 * tool set only), as they were when they were made.
 */
export const jobAuthorityMigration: Migration = {
  version: 6,
  name: "scheduler: job creators (identity, agent, tool set, creating chat)",
  up(db: Database.Database) {
    db.exec(`
      ALTER TABLE cron_jobs ADD COLUMN creator_channel TEXT NOT NULL DEFAULT 'local';
      ALTER TABLE cron_jobs ADD COLUMN creator_user_id TEXT NOT NULL DEFAULT 'owner';
      ALTER TABLE cron_jobs ADD COLUMN creator_user_name TEXT;
      ALTER TABLE cron_jobs ADD COLUMN creator_role TEXT NOT NULL DEFAULT 'owner'
        CHECK (creator_role IN ('owner', 'guest'));
      ALTER TABLE cron_jobs ADD COLUMN creator_agent TEXT;
      ALTER TABLE cron_jobs ADD COLUMN creator_tools TEXT;
      ALTER TABLE cron_jobs ADD COLUMN created_from TEXT;
    `);
    // The three row casts here stay (each checked by shape-metrics): a migration is frozen as it shipped, and it
    // reads the tables as they were at its own version, which today's row schemas don't describe.
    const jobs = db
      .prepare("SELECT id, source, created_by, created_at, agent FROM cron_jobs WHERE source = 'chat'")
      .all() as LegacyJob[];
    const lastSender = db.prepare(
      `SELECT json_extract(payload, '$.userId') AS user_id, json_extract(payload, '$.userName') AS user_name
       FROM inbox WHERE session_key = ? AND received_at <= ? ORDER BY received_at DESC, id DESC LIMIT 1`,
    );
    const sessionAgent = db.prepare("SELECT agent FROM sessions WHERE key = ?");
    const update = db.prepare(
      `UPDATE cron_jobs SET creator_channel = ?, creator_user_id = ?, creator_user_name = ?, creator_agent = ?,
         created_from = ? WHERE id = ?`,
    );
    for (const job of jobs) {
      const chat = job.created_by ? chatOfSessionKey(job.created_by) : null;
      // A job made by a scheduled turn ("cron:<id>:<run>") came from no chat: the owner's.
      if (!chat || chat.channel === "cron" || !chat.chatId) continue;
      const sender = lastSender.get(job.created_by, job.created_at) as
        | { user_id: string | null; user_name: string | null }
        | undefined;
      const agent = (sessionAgent.get(job.created_by) as { agent: string } | undefined)?.agent ?? job.agent;
      update.run(
        chat.channel,
        sender?.user_id ?? "owner",
        sender?.user_name ?? null,
        agent,
        JSON.stringify(chat),
        job.id,
      );
    }
  },
};
