import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "./database.js";

const taskRows = row(
  z.object({
    id: z.string(),
    session_key: z.string(),
    channel: z.string(),
    chat_id: z.string(),
    thread_id: z.string().nullable(),
    agent: z.string(),
    created_by: z.string(),
    label: z.string().nullable(),
    task: z.string(),
    status: z.enum(["running", "done", "failed", "timeout", "cancelled", "interrupted"]),
    result_excerpt: z.string().nullable(),
    started_at: z.number(),
    finished_at: z.number().nullable(),
  }),
  "tasks",
);

export type TaskStatus = "running" | "done" | "failed" | "timeout" | "cancelled" | "interrupted";

/** A background subagent's record (migration 008). */
export interface TaskRecord {
  id: string;
  /** The chat session the task was started from and reports back to. */
  sessionKey: string;
  target: { channel: string; chatId: string; threadId?: string };
  agent: string;
  /** `<channel>:<userId>` of whose authority it carries. */
  createdBy: string;
  label?: string;
  task: string;
  status: TaskStatus;
  resultExcerpt?: string;
  startedAt: number;
  finishedAt?: number;
}

interface TaskRow {
  id: string;
  session_key: string;
  channel: string;
  chat_id: string;
  thread_id: string | null;
  agent: string;
  created_by: string;
  label: string | null;
  task: string;
  status: TaskStatus;
  result_excerpt: string | null;
  started_at: number;
  finished_at: number | null;
}

const EXCERPT_CHARS = 500;

/** The `tasks` table: background subagents, running and finished. */
export class TaskRepository {
  constructor(private readonly db: Db) {}

  insert(task: Omit<TaskRecord, "status" | "resultExcerpt" | "finishedAt">): void {
    this.db
      .prepare(
        `INSERT INTO tasks (id, session_key, channel, chat_id, thread_id, agent, created_by, label, task, started_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        task.id,
        task.sessionKey,
        task.target.channel,
        task.target.chatId,
        task.target.threadId ?? null,
        task.agent,
        task.createdBy,
        task.label ?? null,
        task.task,
        task.startedAt,
      );
  }

  /** Records how a running task ended; a task that already ended keeps its first ending. */
  finish(id: string, status: Exclude<TaskStatus, "running">, result: string, at: number): boolean {
    const changed = this.db
      .prepare(
        "UPDATE tasks SET status = ?, result_excerpt = ?, finished_at = ? WHERE id = ? AND status = 'running'",
      )
      .run(status, result.slice(0, EXCERPT_CHARS), at, id);
    return changed.changes > 0;
  }

  get(id: string): TaskRecord | undefined {
    const row = taskRows.one(this.db.prepare("SELECT * FROM tasks WHERE id = ?").get(id));
    return row ? fromRow(row) : undefined;
  }

  /** A session's running tasks and its most recent finished ones, newest first. */
  listForSession(sessionKey: string, recent = 10): TaskRecord[] {
    const rows = taskRows.all(
      this.db
        .prepare(
          `SELECT * FROM tasks WHERE session_key = ? AND status = 'running'
         UNION ALL
         SELECT * FROM (SELECT * FROM tasks WHERE session_key = ? AND status != 'running'
                        ORDER BY started_at DESC, rowid DESC LIMIT ?)
         ORDER BY started_at DESC`,
        )
        .all(sessionKey, sessionKey, recent),
    );
    return rows.map(fromRow);
  }

  /** Marks every task still "running" as "interrupted" (after a restart) and returns them. */
  interruptRunning(at: number): TaskRecord[] {
    return this.db.transaction(() => {
      const rows = taskRows.all(this.db.prepare("SELECT * FROM tasks WHERE status = 'running'").all());
      this.db
        .prepare(
          "UPDATE tasks SET status = 'interrupted', result_excerpt = 'Magpie restarted while the task ran.', finished_at = ? WHERE status = 'running'",
        )
        .run(at);
      return rows.map(fromRow);
    })();
  }
}

function fromRow(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    sessionKey: row.session_key,
    target: {
      channel: row.channel,
      chatId: row.chat_id,
      ...(row.thread_id ? { threadId: row.thread_id } : {}),
    },
    agent: row.agent,
    createdBy: row.created_by,
    ...(row.label ? { label: row.label } : {}),
    task: row.task,
    status: row.status,
    ...(row.result_excerpt !== null ? { resultExcerpt: row.result_excerpt } : {}),
    startedAt: row.started_at,
    ...(row.finished_at !== null ? { finishedAt: row.finished_at } : {}),
  };
}
