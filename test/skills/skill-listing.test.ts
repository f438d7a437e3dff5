import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { magpieStatePaths } from "../../src/security/magpie-state.js";
import type { PathScope } from "../../src/security/path-resolver.js";
import { SkillCatalog } from "../../src/skills/skill-catalog.js";

/**
 * The skills listing is read for every turn (the system prompt's menu), so it is on the way from a message to its
 * LLM request (issue 35, cost on the hot path). With nothing changed it must not wait on the thread pool — each
 * awaited realpath, stat or readdir is a wake-up of the event loop, milliseconds on a loaded box — and whatever
 * changed must still be seen on the very next listing.
 */

const skill = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nSteps.\n`;

let root: string;
let workspace: string;
let skills: string;
let extra: string;
let dataDir: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "magpie-skill-listing-")));
  dataDir = path.join(root, "data");
  workspace = path.join(root, "workspace");
  skills = path.join(workspace, "skills");
  extra = path.join(root, "more-skills");
  for (const dir of [dataDir, skills, extra]) mkdirSync(dir, { recursive: true });
  writeSkill(skills, "deploy", skill("deploy", "Deploy the site"));
  writeSkill(skills, "backup", skill("backup", "Back up the disk"));
  writeSkill(extra, "notes", skill("notes", "Keep meeting notes"));
  // Valid front matter in Magpie's state: a catalog that opened it would list it.
  writeSkill(dataDir, "state-secret", skill("state-secret", "SECRET from the data dir"));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function writeSkill(dir: string, folder: string, text: string): void {
  mkdirSync(path.join(dir, folder), { recursive: true });
  writeFileSync(path.join(dir, folder, "SKILL.md"), text);
}

function scope(): PathScope {
  return {
    workspace,
    allowedPaths: [],
    home: root,
    state: magpieStatePaths(
      {
        sourcePath: path.join(root, "magpie.yaml"),
        envFiles: [],
        dataDir,
        workspace,
        tools: { files: { allowedPaths: [] } } as never,
      },
      root,
    ),
  };
}

/**
 * The listing is kept between turns while nothing it depends on changed; what changed in the last seconds is not
 * kept (file times are coarse). `settled` moves the catalog's clock a minute on, so what the tests just wrote
 * counts as old and the kept listing is what is checked; `now` is the real clock.
 */
let clock: (() => number) | undefined;
const settledClock = () => Date.now() + 60_000;

const catalog = () =>
  new SkillCatalog({ dirs: [skills, extra], guard: { scope, level: () => "medium" }, clock });

async function names(of: SkillCatalog): Promise<string[]> {
  return (await of.list()).available.map((entry) => entry.name).sort();
}

describe.each([
  ["now", undefined],
  ["settled", settledClock],
])("the skills listing on the hot path (clock: %s)", (_name, chosen) => {
  beforeEach(() => {
    clock = chosen;
  });

  it("ATTACK: with nothing changed, a listing waits on no thread-pool call (done before the event loop turns)", async () => {
    // Files changed in the last seconds are read again (see below): these count as old.
    clock = settledClock;
    const skillCatalog = catalog();
    // The first listing reads and parses the files.
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const listing = await skillCatalog.list();
    // Every await in it was a resolved promise: the event loop never turned (an fs.promises call makes it turn).
    expect(turned).toBe(false);
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["backup", "deploy", "notes"]);
  });

  it("a skill added, edited or removed is seen on the next listing", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);

    writeSkill(skills, "garden", skill("garden", "Water the garden"));
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "garden", "notes"]);

    writeSkill(skills, "deploy", skill("deploy", "Deploy the site with rsync, then check it"));
    const edited = (await skillCatalog.list()).available.find((entry) => entry.name === "deploy");
    expect(edited?.description).toBe("Deploy the site with rsync, then check it");

    rmSync(path.join(skills, "backup"), { recursive: true });
    expect(await names(skillCatalog)).toEqual(["deploy", "garden", "notes"]);

    // A folder renamed to another name: the same SKILL.md under a new folder.
    renameSync(path.join(skills, "garden"), path.join(skills, "yard"));
    expect(await names(skillCatalog)).toEqual(["deploy", "garden", "notes"]);
    expect((await skillCatalog.list()).available.find((entry) => entry.name === "garden")?.file).toBe(
      path.join(skills, "yard", "SKILL.md"),
    );
  });

  it("a skills directory that appears, or disappears, after a listing is seen on the next one", async () => {
    rmSync(skills, { recursive: true });
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["notes"]);
    writeSkill(skills, "deploy", skill("deploy", "Deploy the site"));
    expect(await names(skillCatalog)).toEqual(["deploy", "notes"]);
    rmSync(extra, { recursive: true });
    expect(await names(skillCatalog)).toEqual(["deploy"]);
  });

  it("ATTACK: a skills directory swapped for a symlink into Magpie's state after a listing is refused on the next one", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    // The agent can write the workspace: it replaces skills/ with a link to the data directory.
    rmSync(skills, { recursive: true });
    symlinkSync(dataDir, skills);
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["notes"]);
    expect(listing.refused).toEqual([expect.objectContaining({ folder: skills, rule: "file.magpie_state" })]);
    // And back: the real directory is read again.
    rmSync(skills);
    writeSkill(skills, "deploy", skill("deploy", "Deploy the site"));
    expect(await names(skillCatalog)).toEqual(["deploy", "notes"]);
  });

  it("ATTACK: a skill folder swapped for a symlink into Magpie's state after a listing is refused on the next one", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    rmSync(path.join(skills, "backup"), { recursive: true });
    symlinkSync(path.join(dataDir, "state-secret"), path.join(skills, "backup"));
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["deploy", "notes"]);
    expect(listing.refused.map((refusal) => [refusal.folder, refusal.rule])).toEqual([
      ["backup", "file.magpie_state"],
    ]);
  });

  it("ATTACK: a folder symlink whose target's parent is moved into Magpie's state is refused on the next listing (the same file, the same stats)", async () => {
    // skills/tools → ../lib/tools: the folder is a symlink, its SKILL.md judged where it leads (inside the workspace).
    const lib = path.join(workspace, "lib");
    writeSkill(lib, "tools", skill("tools", "Use the tools"));
    symlinkSync(path.join(lib, "tools"), path.join(skills, "tools"));
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes", "tools"]);
    // lib/ moves into the data directory and a link takes its place: the folder's symlink, the SKILL.md's inode,
    // size, times and link count are all as they were; only where it really is changed.
    const file = path.join(skills, "tools", "SKILL.md");
    const before = statSync(file, { bigint: true });
    renameSync(lib, path.join(dataDir, "lib"));
    symlinkSync(path.join(dataDir, "lib"), lib);
    const after = statSync(file, { bigint: true });
    expect([after.ino, after.size, after.mtimeNs, after.ctimeNs, after.nlink]).toEqual([
      before.ino,
      before.size,
      before.mtimeNs,
      before.ctimeNs,
      before.nlink,
    ]);
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["backup", "deploy", "notes"]);
    expect(listing.refused.map((refusal) => [refusal.folder, refusal.rule])).toEqual([
      ["tools", "file.magpie_state"],
    ]);
  });

  it("ATTACK: a skill folder added, then renamed, with the skills directory's times set back is seen on the next listing", async () => {
    // The directory's entries are kept while its stat is unchanged: `touch -d` puts its mtime back, not its ctime.
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(skills, old, old);
    const setBack = statSync(skills, { bigint: true }).mtimeNs;
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    writeSkill(skills, "restore", skill("restore", "Restore the disk"));
    utimesSync(skills, old, old);
    expect(statSync(skills, { bigint: true }).mtimeNs).toBe(setBack);
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes", "restore"]);
    renameSync(path.join(skills, "restore"), path.join(skills, "restore-2"));
    utimesSync(skills, old, old);
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.file).sort()).toEqual(
      [
        ...["backup", "deploy", "restore-2"].map((folder) => path.join(skills, folder, "SKILL.md")),
        path.join(extra, "notes", "SKILL.md"),
      ].sort(),
    );
    // And what the renamed folder holds is looked at from then on: an edit after that listing is seen.
    writeFileSync(path.join(skills, "restore-2", "SKILL.md"), skill("restore", "Wipe the disk!!"));
    expect((await skillCatalog.list()).available.find((entry) => entry.name === "restore")?.description).toBe(
      "Wipe the disk!!",
    );
  });

  it("a verdict given under one security level is not carried over to another (the level is read per listing)", async () => {
    let level: "medium" | "high" = "medium";
    // The workspace's skills directory is a link out of the workspace: Warn at medium (refused while scanning),
    // allowed at high.
    rmSync(skills, { recursive: true });
    symlinkSync(extra, skills);
    const skillCatalog = new SkillCatalog({ dirs: [skills], guard: { scope, level: () => level }, clock });
    expect(await names(skillCatalog)).toEqual([]);
    level = "high";
    expect(await names(skillCatalog)).toEqual(["notes"]);
    level = "medium";
    expect(await names(skillCatalog)).toEqual([]);
    expect((await skillCatalog.list()).refused).toEqual([
      expect.objectContaining({ folder: skills, rule: "file.outside_workspace_read" }),
    ]);
  });

  it("ATTACK: a skill folder swapped for a symlink to a copy outside the workspace is refused on the next listing", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    // The same bytes and times outside: only the folder's kind and where it leads tell them apart.
    const outside = path.join(root, "outside", "backup");
    writeSkill(path.dirname(outside), "backup", skill("backup", "Back up the disk"));
    const before = statSync(path.join(skills, "backup", "SKILL.md"));
    utimesSync(path.join(outside, "SKILL.md"), before.atime, before.mtime);
    rmSync(path.join(skills, "backup"), { recursive: true });
    symlinkSync(outside, path.join(skills, "backup"));
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["deploy", "notes"]);
    expect(listing.refused.map((refusal) => [refusal.folder, refusal.rule])).toEqual([
      ["backup", "file.outside_workspace_read"],
    ]);
  });

  it("ATTACK: a SKILL.md replaced by a hard link to a file outside is refused on the next listing", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    const file = path.join(skills, "deploy", "SKILL.md");
    const outside = path.join(root, "outside.md");
    writeFileSync(outside, skill("deploy", "Deploy the site"));
    const before = statSync(file);
    utimesSync(outside, before.atime, before.mtime);
    rmSync(file);
    linkSync(outside, file);
    const listing = await skillCatalog.list();
    expect(listing.available.map((entry) => entry.name).sort()).toEqual(["backup", "notes"]);
    expect(listing.refused).toEqual([
      expect.objectContaining({ folder: "deploy", reason: expect.stringContaining("hard-linked") }),
    ]);
  });

  it("ATTACK: a hard link to a SKILL.md made elsewhere after a listing is seen on the next one", async () => {
    const skillCatalog = catalog();
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    // Nothing in the skills directory changes but the file's link count.
    linkSync(path.join(skills, "deploy", "SKILL.md"), path.join(root, "elsewhere.md"));
    expect(await names(skillCatalog)).toEqual(["backup", "notes"]);
  });
});

describe("the kept skills listing and coarse file times", () => {
  it("ATTACK: an edit of the same size with the mtime set back is seen on the next listing (only its ctime changed)", async () => {
    for (const chosen of [undefined, settledClock]) {
      clock = chosen;
      const skillCatalog = catalog();
      const file = path.join(skills, "deploy", "SKILL.md");
      const mtime = new Date(Date.now() - 3_600_000);
      writeFileSync(file, skill("deploy", "Deploy version A"));
      utimesSync(file, mtime, mtime);
      const first = statSync(file, { bigint: true });
      expect(
        (await skillCatalog.list()).available.find((entry) => entry.name === "deploy")?.description,
      ).toBe("Deploy version A");
      // In place (the same inode), the same size, the same mtime: `touch -d` hides an edit from size and mtime.
      writeFileSync(file, skill("deploy", "Deploy version B"));
      utimesSync(file, mtime, mtime);
      const second = statSync(file, { bigint: true });
      expect([second.ino, second.size, second.mtimeNs]).toEqual([first.ino, first.size, first.mtimeNs]);
      expect(
        (await skillCatalog.list()).available.find((entry) => entry.name === "deploy")?.description,
      ).toBe("Deploy version B");
    }
  });

  it("what changed in the last seconds is read again on every listing (two edits in one tick of a coarse file clock)", async () => {
    // A kernel without fine-grained timestamps gives two writes within one tick (1–10 ms) the same size, mtime and
    // ctime: nothing changed in the last seconds is kept, so such an edit is read on the next listing.
    clock = undefined;
    const skillCatalog = catalog();
    writeSkill(skills, "deploy", skill("deploy", "Deploy the site"));
    expect(await names(skillCatalog)).toEqual(["backup", "deploy", "notes"]);
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await skillCatalog.list();
    // The files were read again (an fs.promises read turns the event loop).
    expect(turned).toBe(true);
  });
});
