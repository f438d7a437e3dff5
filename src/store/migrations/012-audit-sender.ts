import type { Migration } from "./index.js";

/** Every audited call names whose authority it ran under (DESIGN.md → Audit: session, sender, tool …). */
export const auditSenderMigration: Migration = {
  version: 12,
  name: "audit: sender",
  up: "ALTER TABLE audit ADD COLUMN sender TEXT;",
};
