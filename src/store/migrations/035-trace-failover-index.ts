import type { Migration } from "./index.js";

/**
 * `/metrics` counts delivery failovers from their trace rows (`magpie_delivery_failovers_total`, http/metrics.ts):
 * `WHERE kind = 'failover'` had no index and walked every trace row on each scrape — about seven rows per message
 * ever answered: 0.4 s at 10,000 stored messages, 6.8 s at 1,000,000, with the event loop blocked throughout
 * (issue 37). A partial index holds the failover rows only (a handful), so the count reads just those.
 */
export const traceFailoverIndexMigration: Migration = {
  version: 35,
  name: "store: index of the failover trace rows /metrics counts",
  up: `
    CREATE INDEX trace_events_failover ON trace_events (id) WHERE kind = 'failover';
  `,
};
