import { z } from "zod";
import type { Db } from "../store/database.js";

/** An owner's approval of a skill's content (table `skill_approvals`, migration 023). */
export interface SkillApproval {
  name: string;
  /** `sha256:<hex>` of the folder as approved (see snapshotSkill). */
  hash: string;
  /** The SKILL.md approved, as found in its skills directory. */
  file: string;
  /** Who approved: `<channel>:<userId>` in chat, `cli` from `magpie skills approve`. */
  approvedBy: string;
  approvedAt: number;
}

const rowSchema = z.object({
  name: z.string(),
  hash: z.string(),
  file: z.string(),
  approved_by: z.string(),
  approved_at: z.number(),
});

function fromRow(row: unknown): SkillApproval | undefined {
  const parsed = rowSchema.safeParse(row);
  if (!parsed.success) return undefined;
  const { name, hash, file, approved_by, approved_at } = parsed.data;
  return { name, hash, file, approvedBy: approved_by, approvedAt: approved_at };
}

/** Approved skill hashes by name (case-insensitive, as skills are looked up). Read on every scan: no cache. */
export class SkillApprovals {
  constructor(private readonly db: Db) {}

  get(name: string): SkillApproval | undefined {
    return fromRow(this.db.prepare("SELECT * FROM skill_approvals WHERE name = ?").get(name));
  }

  /** Records (or replaces) the approved hash of a skill. */
  record(approval: SkillApproval): void {
    this.db
      .prepare(
        `INSERT INTO skill_approvals (name, hash, file, approved_by, approved_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET name = excluded.name, hash = excluded.hash, file = excluded.file,
           approved_by = excluded.approved_by, approved_at = excluded.approved_at`,
      )
      .run(approval.name, approval.hash, approval.file, approval.approvedBy, approval.approvedAt);
  }
}
