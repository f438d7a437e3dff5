import type { Migration } from "./index.js";

/**
 * A job's `allowAfterUntrusted` (JSON list of tool names): the tools its prompt runs may still use after untrusted
 * content entered them (DESIGN.md → Security → "Untrusted content"). NULL: none.
 */
export const jobUntrustedMigration: Migration = {
  version: 33,
  name: "scheduler: allowAfterUntrusted per job",
  up: "ALTER TABLE cron_jobs ADD COLUMN allow_after_untrusted TEXT;",
};
