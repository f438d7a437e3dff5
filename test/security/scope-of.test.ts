import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { liveConfigView, liveValue } from "../../src/config/live.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { scopeOf } from "../../src/security/path-resolver.js";
import { SkillCatalog } from "../../src/skills/skill-catalog.js";

/**
 * `scopeOf` is read for every turn (the skills listing) and every file tool call (issue 35, hot path). It returns
 * the same object while nothing in it changed, so the listing keeps what it derived from it by identity; anything
 * changed — a reload, or one of Magpie's state paths swapped for a symlink — gives a new object at once.
 */

let root: string;
let workspace: string;
let dataDir: string;
let outside: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "magpie-scope-of-")));
  workspace = path.join(root, "workspace");
  dataDir = path.join(root, "data");
  outside = path.join(root, "shared");
  for (const dir of [path.join(workspace, "skills"), dataDir, path.join(outside, "tools")])
    mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(root, "magpie.yaml"), "workspace: ./workspace\n");
  writeFileSync(
    path.join(outside, "tools", "SKILL.md"),
    "---\nname: tools\ndescription: Use the shared tools\n---\nSteps.\n",
  );
  // The skill folder leads outside the workspace: listed only while `shared/` is an allowed path.
  symlinkSync(path.join(outside, "tools"), path.join(workspace, "skills", "tools"));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function configWith(allowedPaths: string[]): MagpieConfig {
  // Only the fields scopeOf and the skills listing read.
  const partial = {
    workspace,
    dataDir,
    sourcePath: path.join(root, "magpie.yaml"),
    envFiles: [],
    tools: { files: { allowedPaths } },
  };
  return partial as never;
}

describe("scopeOf", () => {
  it("gives the same frozen object while nothing changed, a new one after a reload", () => {
    const live = liveValue(configWith([]));
    const config = liveConfigView(live);
    const first = scopeOf(config, root);
    expect(scopeOf(config, root)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    live.set(configWith([outside]));
    const reloaded = scopeOf(config, root);
    expect(reloaded).not.toBe(first);
    expect(reloaded.allowedPaths).toEqual([outside]);
    expect(scopeOf(config, root)).toBe(reloaded);
  });

  it("ATTACK: the data directory swapped for a symlink gives a new scope with its new real path at the next call", () => {
    const config = liveConfigView(liveValue(configWith([])));
    const first = scopeOf(config, root);
    const moved = path.join(root, "moved-data");
    renameSync(dataDir, moved);
    symlinkSync(moved, dataDir);
    const next = scopeOf(config, root);
    expect(next).not.toBe(first);
    expect(next.state.protected).toContain(moved);
  });

  it("ATTACK: an allowed path removed by a reload is refused at the very next skills listing", async () => {
    const live = liveValue(configWith([outside]));
    const config = liveConfigView(live);
    const catalog = new SkillCatalog({
      dirs: [path.join(workspace, "skills")],
      guard: { scope: () => scopeOf(config, root), level: () => "medium" },
      // What the test just wrote counts as old: the listing is kept between calls.
      clock: () => Date.now() + 60_000,
    });
    expect((await catalog.list()).available.map((skill) => skill.name)).toEqual(["tools"]);
    expect((await catalog.list()).available.map((skill) => skill.name)).toEqual(["tools"]);
    live.set(configWith([]));
    const listing = await catalog.list();
    expect(listing.available).toEqual([]);
    expect(listing.refused.map((refusal) => [refusal.folder, refusal.rule])).toEqual([
      ["tools", "file.outside_workspace_read"],
    ]);
  });
});
