import type { Migration } from "./index.js";

/**
 * Webhook signatures already used (`POST /hooks/<name>` accepts each once): a SHA-256 of the MAC's bytes, the
 * trigger that accepted it and when the row may go (the signature is stale by then). Kept on disk so a restart
 * doesn't let a captured request in again; pruned as new ones come in.
 */
export const webhookSignaturesMigration: Migration = {
  version: 27,
  name: "triggers: used webhook signatures",
  up: `
    CREATE TABLE webhook_signatures (
      mac_hash BLOB PRIMARY KEY,
      trigger TEXT NOT NULL,
      expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX webhook_signatures_expiry ON webhook_signatures (expires_at);
  `,
};
