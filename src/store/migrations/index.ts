import type Database from "better-sqlite3";
import { coreMigration } from "./001-core.js";
import { accessMigration } from "./002-access.js";
import { memoryMigration } from "./003-memory.js";
import { schedulerMigration } from "./004-scheduler.js";
import { approvalsMigration } from "./005-approvals.js";
import { jobAuthorityMigration } from "./006-job-authority.js";
import { memoryVisibilityMigration } from "./007-memory-visibility.js";
import { tasksMigration } from "./008-tasks.js";
import { questionsMigration } from "./009-questions.js";
import { usageMigration } from "./010-usage.js";
import { auditSenderMigration } from "./012-audit-sender.js";
import { usageDailyMigration } from "./013-usage-daily.js";
import { traceMigration } from "./016-trace.js";
import { cronOutcomesMigration } from "./017-cron-outcomes.js";
import { speechUsageMigration } from "./021-speech-usage.js";
import { skillApprovalsMigration } from "./023-skill-approvals.js";
import { historyIndexesMigration } from "./024-history-indexes.js";
import { webhookSignaturesMigration } from "./027-webhook-signatures.js";
import { stepJournalMigration } from "./028-step-journal.js";
import { provenanceMigration } from "./032-provenance.js";
import { jobUntrustedMigration } from "./033-job-untrusted.js";
import { traceFailoverIndexMigration } from "./035-trace-failover-index.js";
import { provenanceChangeTimeMigration } from "./036-provenance-change-time.js";
import { changeCountersMigration } from "./037-change-counters.js";

/** A numbered schema step; applied once, in order, inside a transaction. */
export interface Migration {
  version: number;
  name: string;
  up: string | ((db: Database.Database) => void);
}

/**
 * Every migration, in order. Numbers are reserved per feature so parallel work never collides:
 * 001 core, 002 access/pairing, 003 memory, 004 scheduler, 005 approvals, 006 job authority, 007 memory visibility, 008 tasks (subagents), 009 questions, 010 usage, 013 usage daily totals (retention), 016 trace (outcomes, trace_events), 017 cron outcomes (missed runs), 021 speech usage (voice replies), 023 skill approvals (pinned skills), 024 history indexes (flat message path), 027 used webhook signatures (replays), 028 step journal (durable turns), 032 provenance (files written, memories stored), 033 allowAfterUntrusted per job, 035 failover trace rows (/metrics without a walk), 036 provenance change time (files), 037 change counters (history and core memories read per turn).
 */
export const migrations: Migration[] = [
  coreMigration,
  accessMigration,
  schedulerMigration,
  memoryMigration,
  approvalsMigration,
  jobAuthorityMigration,
  memoryVisibilityMigration,
  tasksMigration,
  questionsMigration,
  auditSenderMigration,
  usageMigration,
  usageDailyMigration,
  traceMigration,
  cronOutcomesMigration,
  speechUsageMigration,
  skillApprovalsMigration,
  historyIndexesMigration,
  webhookSignaturesMigration,
  stepJournalMigration,
  provenanceMigration,
  jobUntrustedMigration,
  traceFailoverIndexMigration,
  provenanceChangeTimeMigration,
  changeCountersMigration,
];
