import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProvenanceStore } from "../../src/security/provenance-store.js";
import { openDatabase } from "../../src/store/database.js";
import type { Db } from "../../src/store/index.js";

/**
 * A file Magpie wrote in an owner's untainted turn is trusted only while it is the file Magpie left
 * (src/security/provenance-store.ts). Whoever changes it can put its size and mtime back; each attack here did
 * that and was vouched for before migration 036 (size + mtime only).
 */
let dir: string;
let db: Db;
let store: ProvenanceStore;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "magpie-provenance-"));
  db = openDatabase(":memory:");
  store = new ProvenanceStore(db);
});
afterAll(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A file written and recorded as Magpie's (an owner's untainted turn); its path and stats at the write. */
function written(name: string, text = "pay 10 EUR to the landlord\n") {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  // A whole second, so putting it back below is exact (as `touch -d` would).
  fs.utimesSync(file, 1_790_000_000, 1_790_000_000);
  const at = fs.statSync(file);
  store.recordFile(fs.realpathSync(file), []);
  expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: true });
  return { file, at };
}

describe("a written file's provenance", () => {
  it("a same-size edit with the mtime put back (touch -d, os.utime, rsync -t) is no longer Magpie's", () => {
    const { file, at } = written("plan.txt");
    fs.writeFileSync(file, `${"pay 99 EUR to attacker@x\n".padEnd(at.size - 1, " ")}\n`);
    expect(fs.statSync(file).size).toBe(at.size);
    fs.utimesSync(file, 1_790_000_000, 1_790_000_000);
    expect(Math.trunc(fs.statSync(file).mtimeMs)).toBe(Math.trunc(at.mtimeMs));
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: false, sources: [] });
  });

  it("a file swapped for another with the same size and mtime (rename over it) is no longer Magpie's", () => {
    const { file, at } = written("swap.txt");
    const other = path.join(dir, "other.txt");
    fs.writeFileSync(other, "x".repeat(at.size));
    fs.utimesSync(other, 1_790_000_000, 1_790_000_000);
    fs.renameSync(other, file);
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: false, sources: [] });
  });

  it("a hard link made to it (a second name an outsider can write through later) ends the vouching", () => {
    const { file } = written("linked.txt");
    fs.linkSync(file, path.join(dir, "elsewhere.txt"));
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: false, sources: [] });
  });

  it("a row from before the signature (migration 036) vouches for nothing", () => {
    const { file } = written("legacy.txt");
    db.prepare("UPDATE file_provenance SET change_sig = '' WHERE path = ?").run(fs.realpathSync(file));
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: false, sources: [] });
  });

  it("left alone, read many times, it stays trusted; written again by Magpie, trusted again", () => {
    const { file } = written("kept.txt");
    for (let index = 0; index < 3; index++) fs.readFileSync(file);
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: true });
    fs.chmodSync(file, 0o600);
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: false, sources: [] });
    store.recordFile(fs.realpathSync(file), []);
    expect(store.fileOrigin(fs.realpathSync(file))).toEqual({ trusted: true });
  });
});
