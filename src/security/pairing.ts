import { randomInt } from "node:crypto";
import { z } from "zod";
import { type Clock, systemClock } from "../core/clock.js";
import { row } from "../lib/row.js";
import type { Db } from "../store/database.js";

const codeRow = row(z.object({ code: z.string() }), "pairing");
const countValue = row(z.number(), "pairing");
const pairingRows = row(
  z.object({
    code: z.string(),
    channel: z.string(),
    user_id: z.string(),
    user_name: z.string().nullable(),
    chat_id: z.string(),
    created_at: z.number(),
    expires_at: z.number(),
  }),
  "pairing_codes",
);

/** Letters A–Z without I and O, digits 2–9: nothing a human confuses when typing it back. */
export const PAIRING_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
export const PAIRING_CODE_LENGTH = 8;
export const PAIRING_TTL_MS = 60 * 60 * 1000;
export const MAX_PENDING_PER_CHANNEL = 3;

export interface PendingPairing {
  code: string;
  channel: string;
  userId: string;
  userName: string | null;
  chatId: string;
  createdAt: number;
  expiresAt: number;
}

export interface ApprovedSender {
  channel: string;
  userId: string;
  userName: string | null;
  approvedAt: number;
  approvedBy: string;
}

export type IssueResult =
  | { status: "issued"; code: string }
  /** This sender already holds an unexpired code: it is not sent again (no reply flood). */
  | { status: "pending"; code: string }
  /** The channel already has the maximum number of pending codes. */
  | { status: "full" };

export type ApproveResult =
  | { status: "approved"; pairing: PendingPairing }
  | { status: "unknown" }
  | { status: "expired" };

interface PairingRow {
  code: string;
  channel: string;
  user_id: string;
  user_name: string | null;
  chat_id: string;
  created_at: number;
  expires_at: number;
}

const toPairing = (row: PairingRow): PendingPairing => ({
  code: row.code,
  channel: row.channel,
  userId: row.user_id,
  userName: row.user_name,
  chatId: row.chat_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** Generates a pairing code from a CSPRNG. */
export function generatePairingCode(): string {
  let code = "";
  for (let index = 0; index < PAIRING_CODE_LENGTH; index++)
    code += PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)];
  return code;
}

/** Normalizes what a human typed back ("k7qf 2mzp" → "K7QF2MZP"). */
export function normalizeCode(input: string): string {
  return input.replace(/[\s-]/g, "").toUpperCase();
}

/** Pairing codes and approved senders, persisted in SQLite (migration 002). */
export class PairingStore {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock = systemClock,
    private readonly newCode: () => string = generatePairingCode,
  ) {}

  /** Gives an unknown DM sender a code, unless they hold one or the channel has too many pending. */
  issue(input: { channel: string; userId: string; userName?: string; chatId: string }): IssueResult {
    const now = this.clock.now();
    return this.db.transaction((): IssueResult => {
      this.db.prepare("DELETE FROM pairing_codes WHERE expires_at <= ?").run(now);
      const existing = codeRow.one(
        this.db
          .prepare("SELECT code FROM pairing_codes WHERE channel = ? AND user_id = ?")
          .get(input.channel, input.userId),
      );
      if (existing) return { status: "pending", code: existing.code };
      const pending = countValue.only(
        this.db.prepare("SELECT COUNT(*) FROM pairing_codes WHERE channel = ?").pluck().get(input.channel),
      );
      if (pending >= MAX_PENDING_PER_CHANNEL) return { status: "full" };
      let code = this.newCode();
      while (this.db.prepare("SELECT 1 FROM pairing_codes WHERE code = ?").get(code)) code = this.newCode();
      this.db
        .prepare(
          "INSERT INTO pairing_codes (code, channel, user_id, user_name, chat_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(
          code,
          input.channel,
          input.userId,
          input.userName ?? null,
          input.chatId,
          now,
          now + PAIRING_TTL_MS,
        );
      return { status: "issued", code };
    })();
  }

  /** Approves a pending code of `channel`: the sender becomes approved and the code is used up. */
  approve(channel: string, rawCode: string, approvedBy: string): ApproveResult {
    const code = normalizeCode(rawCode);
    const now = this.clock.now();
    return this.db.transaction((): ApproveResult => {
      const row = pairingRows.one(
        this.db.prepare("SELECT * FROM pairing_codes WHERE code = ? AND channel = ?").get(code, channel),
      );
      if (!row) return { status: "unknown" };
      this.db.prepare("DELETE FROM pairing_codes WHERE code = ?").run(code);
      if (row.expires_at <= now) return { status: "expired" };
      this.db
        .prepare(
          `INSERT INTO approved_senders (channel, user_id, user_name, approved_at, approved_by) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (channel, user_id) DO UPDATE SET approved_at = excluded.approved_at, approved_by = excluded.approved_by`,
        )
        .run(row.channel, row.user_id, row.user_name, now, approvedBy);
      return { status: "approved", pairing: toPairing(row) };
    })();
  }

  isApproved(channel: string, userId: string): boolean {
    return (
      this.db
        .prepare("SELECT 1 FROM approved_senders WHERE channel = ? AND user_id = ?")
        .get(channel, userId) !== undefined
    );
  }

  /** Unexpired codes, oldest first. */
  pending(channel?: string): PendingPairing[] {
    const now = this.clock.now();
    const rows = (
      channel
        ? this.db
            .prepare("SELECT * FROM pairing_codes WHERE channel = ? AND expires_at > ? ORDER BY created_at")
            .all(channel, now)
        : this.db
            .prepare("SELECT * FROM pairing_codes WHERE expires_at > ? ORDER BY channel, created_at")
            .all(now)
    ) as PairingRow[];
    return rows.map(toPairing);
  }

  approved(channel?: string): ApprovedSender[] {
    const rows = (
      channel
        ? this.db
            .prepare("SELECT * FROM approved_senders WHERE channel = ? ORDER BY approved_at")
            .all(channel)
        : this.db.prepare("SELECT * FROM approved_senders ORDER BY channel, approved_at").all()
    ) as Array<{
      channel: string;
      user_id: string;
      user_name: string | null;
      approved_at: number;
      approved_by: string;
    }>;
    return rows.map((row) => ({
      channel: row.channel,
      userId: row.user_id,
      userName: row.user_name,
      approvedAt: row.approved_at,
      approvedBy: row.approved_by,
    }));
  }

  /** Removes an approved sender; true when there was one. */
  revoke(channel: string, userId: string): boolean {
    return (
      this.db.prepare("DELETE FROM approved_senders WHERE channel = ? AND user_id = ?").run(channel, userId)
        .changes > 0
    );
  }
}
