import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mcpFeature } from "../../src/app/mcp-feature.js";
import type { SecurityLevel } from "../../src/security/file-guard.js";
import { magpieStatePaths } from "../../src/security/magpie-state.js";
import type { PathScope } from "../../src/security/path-resolver.js";
import { SkillCatalog } from "../../src/skills/skill-catalog.js";
import { reply } from "../fakes/openai.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const skill = (name: string, body: string) =>
  `---\nname: ${name}\ndescription: The ${name} skill\n---\n# ${name}\n\n${body}\n`;

/**
 * A Magpie laid out as in production: config file and `.env` beside `dataDir`, the workspace inside `dataDir`,
 * a home directory and a folder outside all of them.
 */
interface Layout {
  root: string;
  home: string;
  dataDir: string;
  workspace: string;
  skills: string;
  configFile: string;
  envFile: string;
  outside: string;
}

let layout: Layout;

beforeEach(() => {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "magpie-skill-guard-")));
  layout = {
    root,
    home: path.join(root, "home"),
    dataDir: path.join(root, "data"),
    workspace: path.join(root, "data", "workspace"),
    skills: path.join(root, "data", "workspace", "skills"),
    configFile: path.join(root, "magpie.yaml"),
    envFile: path.join(root, ".env"),
    outside: path.join(root, "outside"),
  };
  for (const dir of [layout.home, layout.skills, layout.outside]) mkdirSync(dir, { recursive: true });
  // Both hold valid front matter, so a catalog that opened them would list them as skills.
  writeFileSync(layout.configFile, skill("config-file", "CONFIG-SECRET bot token"));
  writeFileSync(layout.envFile, skill("env-file", "ENV-SECRET=sk-live"));
});

afterEach(() => {
  rmSync(layout.root, { recursive: true, force: true });
});

function scope(): PathScope {
  return {
    workspace: layout.workspace,
    allowedPaths: [],
    home: layout.home,
    state: magpieStatePaths(
      {
        sourcePath: layout.configFile,
        envFiles: [layout.envFile],
        dataDir: layout.dataDir,
        workspace: layout.workspace,
        tools: { files: { allowedPaths: [] } } as never,
      },
      layout.home,
    ),
  };
}

function catalog(extraDirs: string[] = [], level: SecurityLevel = "medium"): SkillCatalog {
  return new SkillCatalog({ dirs: [layout.skills, ...extraDirs], guard: { scope, level: () => level } });
}

function writeSkillAt(file: string, name: string, body: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, skill(name, body));
  return file;
}

/** Sets a path's access time far in the past: with relatime, any later read or readdir moves it to now. */
function ageAccessTime(target: string): void {
  const { mtime } = statSync(target);
  utimesSync(target, new Date("2000-01-01T00:00:00Z"), mtime);
}

const accessed = (target: string) => statSync(target).atimeMs > Date.parse("2001-01-01T00:00:00Z");

/** True when this filesystem records reads in atime (ext4 relatime does; noatime would make the proof moot). */
function atimeIsRecorded(): boolean {
  const probe = path.join(layout.outside, "atime-probe");
  writeFileSync(probe, "x");
  ageAccessTime(probe);
  readFileSync(probe);
  return accessed(probe);
}

describe("skills are read through the file guard", () => {
  it("a SKILL.md symlinked to a note outside the workspace is refused (Warn at medium), listed with the rule", async () => {
    const note = writeSkillAt(
      path.join(layout.home, "notes", "private.md"),
      "private-note",
      "HOME-NOTE-TEXT",
    );
    mkdirSync(path.join(layout.skills, "notes"));
    symlinkSync(note, path.join(layout.skills, "notes", "SKILL.md"));
    const listing = await catalog().list();
    expect(listing.available.map((entry) => entry.name)).toEqual([]);
    expect(JSON.stringify(listing)).not.toContain("HOME-NOTE-TEXT");
    expect(listing.refused).toEqual([
      expect.objectContaining({ folder: "notes", rule: "file.outside_workspace_read" }),
    ]);
    expect(listing.refused[0]!.reason).toContain(`resolves to ${note}`);
    // The same read a file tool may make at security.level high (Allow there).
    expect((await catalog([], "high").list()).available.map((entry) => entry.name)).toEqual(["private-note"]);
  });

  it("a SKILL.md symlinked to a system file is refused (Deny) and never read", async () => {
    mkdirSync(path.join(layout.skills, "passwd"));
    symlinkSync("/etc/passwd", path.join(layout.skills, "passwd", "SKILL.md"));
    const listing = await catalog([], "high").list();
    // Had it been read, its missing front matter would be reported as a problem.
    expect(listing.problems).toEqual([]);
    expect(listing.refused).toEqual([
      expect.objectContaining({ folder: "passwd", rule: "file.system_path_read" }),
    ]);
  });

  it("a skill folder symlinked outside the workspace is refused", async () => {
    writeSkillAt(path.join(layout.outside, "tools", "SKILL.md"), "outside-tools", "OUTSIDE-TEXT");
    symlinkSync(path.join(layout.outside, "tools"), path.join(layout.skills, "tools"));
    const listing = await catalog().list();
    expect(listing.available).toEqual([]);
    expect(listing.refused).toEqual([
      expect.objectContaining({ folder: "tools", rule: "file.outside_workspace_read" }),
    ]);
  });

  it("a hard-linked SKILL.md is refused: another name for it may live anywhere", async () => {
    const original = writeSkillAt(path.join(layout.outside, "linked.md"), "linked", "HARD-LINK-TEXT");
    mkdirSync(path.join(layout.skills, "linked"));
    linkSync(original, path.join(layout.skills, "linked", "SKILL.md"));
    const listing = await catalog().list();
    expect(listing.available).toEqual([]);
    expect(listing.refused).toEqual([
      expect.objectContaining({ folder: "linked", rule: "file.outside_workspace_read" }),
    ]);
    expect(listing.refused[0]!.reason).toContain("hard-linked");
  });

  it("a hard link to the config file is refused as Magpie's state, at every level", async () => {
    mkdirSync(path.join(layout.skills, "cfg"));
    linkSync(layout.configFile, path.join(layout.skills, "cfg", "SKILL.md"));
    const listing = await catalog([], "high").list();
    expect(listing.available).toEqual([]);
    expect(listing.refused).toEqual([expect.objectContaining({ folder: "cfg", rule: "file.magpie_state" })]);
  });

  it("Magpie's state is never opened: symlinks to the config, .env, dataDir, and skills dirs inside dataDir", async () => {
    if (!atimeIsRecorded())
      throw new Error("this filesystem does not record atime; the never-opened proof needs it");
    // A valid skill inside dataDir (outside the workspace): state.
    const stateFolder = path.join(layout.dataDir, "secret-skill");
    const stateSkill = writeSkillAt(path.join(stateFolder, "SKILL.md"), "state-skill", "STATE-TEXT");
    const stateSkills = path.join(layout.dataDir, "skills-in-state");
    const stateNested = writeSkillAt(path.join(stateSkills, "nested", "SKILL.md"), "nested", "NESTED-TEXT");
    const dataSkill = writeSkillAt(path.join(layout.dataDir, "SKILL.md"), "data-root", "DATA-ROOT-TEXT");
    for (const folder of ["cfg", "env"]) mkdirSync(path.join(layout.skills, folder));
    symlinkSync(layout.configFile, path.join(layout.skills, "cfg", "SKILL.md"));
    symlinkSync(layout.envFile, path.join(layout.skills, "env", "SKILL.md"));
    symlinkSync(stateFolder, path.join(layout.skills, "state"));
    // Another workspace's skills directory that is itself a symlink into dataDir.
    const otherSkills = path.join(layout.workspace, "more-skills");
    symlinkSync(stateSkills, otherSkills);
    const watched = [
      layout.configFile,
      layout.envFile,
      stateFolder,
      stateSkill,
      stateSkills,
      path.dirname(stateNested),
      stateNested,
      dataSkill,
    ];
    for (const target of watched) ageAccessTime(target);

    // skills.dirs: dataDir itself, a folder in it, and the folder holding dataDir (its entry `data` is state).
    const listing = await catalog([otherSkills, layout.dataDir, stateSkills, layout.root]).list();
    const text = JSON.stringify(listing);
    for (const secret of ["CONFIG-SECRET", "ENV-SECRET", "STATE-TEXT", "NESTED-TEXT", "DATA-ROOT-TEXT"])
      expect(text).not.toContain(secret);
    expect(listing.available).toEqual([]);
    expect(listing.problems).toEqual([]);
    expect(watched.filter(accessed)).toEqual([]);
    expect(listing.refused.map((entry) => [entry.folder, entry.rule])).toEqual([
      ["cfg", "file.magpie_state"],
      ["env", "file.magpie_state"],
      ["state", "file.magpie_state"],
      [otherSkills, "file.magpie_state"],
      [layout.dataDir, "file.magpie_state"],
      [stateSkills, "file.magpie_state"],
      ["data", "file.magpie_state"],
    ]);
  });

  it("links that stay inside the skills directory or the workspace load as before, and edits are picked up", async () => {
    const shared = writeSkillAt(path.join(layout.workspace, "notes", "deploy.md"), "deploy", "Version one.");
    mkdirSync(path.join(layout.skills, "deploy"));
    symlinkSync(shared, path.join(layout.skills, "deploy", "SKILL.md"));
    writeSkillAt(path.join(layout.skills, "brew", "SKILL.md"), "brew", "Make coffee.");
    symlinkSync(path.join(layout.skills, "brew"), path.join(layout.skills, "brew-alias"));
    const skills = catalog();
    expect((await skills.list()).available.map((entry) => entry.name)).toEqual(["brew", "deploy"]);
    writeFileSync(shared, skill("deploy", "Version two, longer."));
    expect((await skills.get("deploy"))?.text).toContain("Version two, longer.");

    // A refused skill becomes available once the owner copies it in, without a restart.
    const note = writeSkillAt(path.join(layout.outside, "later.md"), "later", "Later steps.");
    mkdirSync(path.join(layout.skills, "later"));
    symlinkSync(note, path.join(layout.skills, "later", "SKILL.md"));
    expect((await skills.list()).refused.map((entry) => entry.folder)).toEqual(["later"]);
    rmSync(path.join(layout.skills, "later", "SKILL.md"));
    writeFileSync(path.join(layout.skills, "later", "SKILL.md"), readFileSync(note));
    const listing = await skills.list();
    expect(listing.refused).toEqual([]);
    expect(listing.available.map((entry) => entry.name)).toContain("later");
  });
});

describe("a refused skill in the running bot", () => {
  let running: TestApp | null = null;
  afterEach(async () => {
    await running?.stop();
    running = null;
  });

  it("invoke_skill returns the refusal (never the file), /skills lists it with the rule, the prompt leaves it out", async () => {
    running = await startTestApp({ features: [mcpFeature] });
    const outside = realpathSync(mkdtempSync(path.join(os.tmpdir(), "magpie-skill-note-")));
    try {
      const note = writeSkillAt(path.join(outside, "note.md"), "snoop", "OUTSIDE-NOTE-TEXT");
      const folder = path.join(running.config.workspace, "skills", "snoop");
      mkdirSync(folder, { recursive: true });
      symlinkSync(note, path.join(folder, "SKILL.md"));
      const result = await running.app.tools.execute(
        {
          id: "s1",
          type: "function",
          function: { name: "invoke_skill", arguments: JSON.stringify({ skill_name: "snoop" }) },
        },
        ["invoke_skill"],
        ownerCallContext(),
      );
      expect(result).not.toContain("OUTSIDE-NOTE-TEXT");
      expect(result).toContain("file.outside_workspace_read");
      expect(result).toContain("not loaded");
      const text = String(await running.app.commands.get("skills")!.run({} as never));
      expect(text).toContain(
        "Refused by the file guard (not loaded):\n• snoop — file.outside_workspace_read:",
      );
      expect(text).not.toContain("OUTSIDE-NOTE-TEXT");
      running.llm!.script(
        reply.text("ok", (body) => expect(String(body.messages[0]?.content)).not.toContain("snoop")),
      );
      await running.channel!.receive("hello");
      await running.channel!.waitForSent(1, 10_000);
      running.llm!.assertDone();
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
