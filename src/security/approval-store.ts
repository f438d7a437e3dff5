import { z } from "zod";
import { row } from "../lib/row.js";
import type { Db } from "../store/database.js";

const approvalRows = row(
  z.object({
    id: z.string(),
    session_key: z.string(),
    channel: z.string(),
    chat_id: z.string(),
    tool: z.string(),
    action: z.string(),
    reason: z.string(),
    status: z.enum(["pending", "approved", "denied", "timeout", "cancelled"]),
    requested_at: z.number(),
    expires_at: z.number(),
    decided_at: z.number().nullable(),
    decided_by: z.string().nullable(),
  }),
  "approvals",
);

export type ApprovalStatus = "pending" | "approved" | "denied" | "timeout" | "cancelled";

export interface ApprovalRecord {
  id: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  tool: string;
  action: string;
  reason: string;
  status: ApprovalStatus;
  requestedAt: number;
  expiresAt: number;
  decidedAt: number | null;
  decidedBy: string | null;
}

interface ApprovalRow {
  id: string;
  session_key: string;
  channel: string;
  chat_id: string;
  tool: string;
  action: string;
  reason: string;
  status: ApprovalStatus;
  requested_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
}

const toRecord = (row: ApprovalRow): ApprovalRecord => ({
  id: row.id,
  sessionKey: row.session_key,
  channel: row.channel,
  chatId: row.chat_id,
  tool: row.tool,
  action: row.action,
  reason: row.reason,
  status: row.status,
  requestedAt: row.requested_at,
  expiresAt: row.expires_at,
  decidedAt: row.decided_at,
  decidedBy: row.decided_by,
});

/** Approval requests and their decisions (table `approvals`, migration 005). */
export class ApprovalRepository {
  constructor(private readonly db: Db) {}

  insert(record: Omit<ApprovalRecord, "status" | "decidedAt" | "decidedBy">): void {
    this.db
      .prepare(
        `INSERT INTO approvals (id, session_key, channel, chat_id, tool, action, reason, status, requested_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
      )
      .run(
        record.id,
        record.sessionKey,
        record.channel,
        record.chatId,
        record.tool,
        record.action,
        record.reason,
        record.requestedAt,
        record.expiresAt,
      );
  }

  get(id: string): ApprovalRecord | null {
    const row = approvalRows.one(this.db.prepare("SELECT * FROM approvals WHERE id = ?").get(id));
    return row ? toRecord(row) : null;
  }

  /** Settles a pending request; false when it was already settled (first decision wins). */
  settle(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    decidedBy: string | null,
    at: number,
  ): boolean {
    const result = this.db
      .prepare(
        "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = 'pending'",
      )
      .run(status, decidedBy, at, id);
    return result.changes === 1;
  }

  /** Opens a request again for a resumed turn (same id, new deadline); false when a person already decided it. */
  reopen(id: string, requestedAt: number, expiresAt: number): boolean {
    return (
      this.db
        .prepare(
          `UPDATE approvals SET status = 'pending', requested_at = ?, expires_at = ?, decided_at = NULL
           WHERE id = ? AND decided_by IS NULL`,
        )
        .run(requestedAt, expiresAt, id).changes === 1
    );
  }

  /** Requests left pending by a previous process: their turns are gone, so they count as timed out. */
  expireOrphans(at: number): number {
    return this.db
      .prepare("UPDATE approvals SET status = 'timeout', decided_at = ? WHERE status = 'pending'")
      .run(at).changes;
  }

  recent(limit = 20): ApprovalRecord[] {
    return approvalRows
      .all(this.db.prepare("SELECT * FROM approvals ORDER BY requested_at DESC LIMIT ?").all(limit))
      .map(toRecord);
  }
}
