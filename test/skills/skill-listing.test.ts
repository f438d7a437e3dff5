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

const catalog = () => new SkillCatalog({ dirs: [skills, extra], guard: { scope, level: () => "medium" } });

async function names(of: SkillCatalog): Promise<string[]> {
  return (await of.list()).available.map((entry) => entry.name).sort();
}

describe("the skills listing on the hot path", () => {
  it("ATTACK: with nothing changed, a listing waits on no thread-pool call (done before the event loop turns)", async () => {
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

  it("a verdict given under one security level is not carried over to another (the level is read per listing)", async () => {
    let level: "medium" | "high" = "medium";
    // The workspace's skills directory is a link out of the workspace: Warn at medium (refused while scanning),
    // allowed at high.
    rmSync(skills, { recursive: true });
    symlinkSync(extra, skills);
    const skillCatalog = new SkillCatalog({ dirs: [skills], guard: { scope, level: () => level } });
    expect(await names(skillCatalog)).toEqual([]);
    level = "high";
    expect(await names(skillCatalog)).toEqual(["notes"]);
    level = "medium";
    expect(await names(skillCatalog)).toEqual([]);
    expect((await skillCatalog.list()).refused).toEqual([
      expect.objectContaining({ folder: skills, rule: "file.outside_workspace_read" }),
    ]);
  });
});
