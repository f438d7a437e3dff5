import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { JobStore } from "../../src/scheduler/job-store.js";
import { ProvenanceStore } from "../../src/security/provenance-store.js";
import { Store } from "../../src/store/index.js";

/**
 * A tool-call step reads the cron jobs (`cron_list`), the tainted memories and a file's origin, and writes its audit
 * row (issue 35, hot path): each prepared its SQL statement on every call, a compilation by SQLite each time. They
 * are prepared once per connection; what they read is still read afresh.
 */
describe("statements on a step's path are prepared once per connection", () => {
  it("ATTACK: a second round of cron_list, taintedMemories, fileOrigin and the audit row prepares nothing", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-prepared-once-"));
    const store = Store.open(dir);
    const jobs = new JobStore(store.db);
    const provenance = new ProvenanceStore(store.db);
    const file = path.join(dir, "note.txt");
    writeFileSync(file, "hello");
    const source = { kind: "web", label: "https://example.test/" } as const;
    const round = () => {
      jobs.list();
      const tainted = provenance.taintedMemories("main");
      provenance.fileOrigin(file);
      store.audit.record({
        tool: "cron_list",
        arguments: "{}",
        verdict: "allow",
        outcome: "ok",
        durationMs: 1,
      });
      return tainted;
    };
    expect(round().size).toBe(0);
    const prepare = vi.spyOn(store.db, "prepare");
    // What changed between the rounds is read: the statements are kept, not their results.
    provenance.recordMemory("main", "k", [source]);
    prepare.mockClear();
    expect([...round().keys()]).toEqual(["k"]);
    expect(prepare).not.toHaveBeenCalled();
    expect(store.audit.recent(5).length).toBe(2);
    store.close();
  });
});
