import { z } from "zod";

/** Days to keep a kind of row; null keeps it forever. */
const keepDays = (days: number | null) =>
  z.number().int().min(1, "keep at least 1 day (or null to keep forever)").nullable().default(days);

/**
 * How long finished rows are kept (DESIGN.md → Configuration → Retention); pruned at start-up and once a day.
 * Unfinished inbox and outbox rows are never pruned.
 */
export const retentionSchema = z
  .strictObject({
    /** The tool-call audit log and the usage ledger's per-request rows (their daily totals stay). */
    auditDays: keepDays(90),
    /** Handled inbound messages (the redelivery de-duplication reaches back this far). */
    inboxDays: keepDays(30),
    /** Sent or failed outbound messages. */
    outboxDays: keepDays(30),
    /** Conversation history; null keeps it (compaction already bounds what a turn reads). */
    messagesDays: keepDays(null),
  })
  .prefault({});

export type RetentionConfig = z.infer<typeof retentionSchema>;
