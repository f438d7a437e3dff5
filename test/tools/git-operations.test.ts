import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hasWorkingSandbox } from "../helpers/requires.js";
import { createToolHarness, errorCode, type ToolHarness } from "./tool-harness.js";

let harness: ToolHarness;
const git = (...args: string[]) => execFileSync("git", args, { cwd: harness.workspace, encoding: "utf8" });

beforeEach(async () => {
  harness = await createToolHarness();
  git("init", "-q", "-b", "main");
  git("config", "user.email", "magpie@test.invalid");
  git("config", "user.name", "Magpie Test");
  git("config", "commit.gpgsign", "false");
  await fs.writeFile(path.join(harness.workspace, "a.txt"), "one\n");
  git("add", "a.txt");
  git("commit", "-q", "-m", "initial");
});
afterEach(async () => {
  await harness.cleanup();
});

const run = async (args: Record<string, unknown>) => {
  const text = await harness.call("git_operations", args);
  const code = errorCode(text);
  if (code) throw new Error(`git_operations failed: ${text}`);
  return JSON.parse(text);
};

describe("git_operations", () => {
  it("status, add, diff, commit, log, branch, checkout, stash give structured results", async () => {
    await fs.writeFile(path.join(harness.workspace, "a.txt"), "one\ntwo\n");
    await fs.writeFile(path.join(harness.workspace, "b.txt"), "new\n");
    const status = await run({ operation: "status" });
    expect(status.branch).toBe("main");
    expect(status.clean).toBe(false);
    expect(status.files).toEqual(
      expect.arrayContaining([
        { index: " ", worktree: "M", path: "a.txt" },
        { index: "?", worktree: "?", path: "b.txt" },
      ]),
    );
    const diff = await run({ operation: "diff" });
    expect(diff.files).toEqual([{ path: "a.txt", added: 1, removed: 0 }]);
    expect(diff.diff).toContain("+two");

    await run({ operation: "add", files: ["a.txt", "b.txt"] });
    expect((await run({ operation: "diff", cached: true })).files).toHaveLength(2);
    const commit = await run({ operation: "commit", message: "second: add b, update a" });
    expect(commit.hash).toMatch(/^[0-9a-f]{40}$/);
    const log = await run({ operation: "log", limit: 5 });
    expect(log.commits.map((entry: { subject: string }) => entry.subject)).toEqual([
      "second: add b, update a",
      "initial",
    ]);
    expect(log.commits[0].author).toBe("Magpie Test");

    expect(await run({ operation: "branch", branch: "feature/x" })).toEqual({
      operation: "branch",
      created: "feature/x",
    });
    const branches = await run({ operation: "branch" });
    expect(branches.current).toBe("main");
    expect(branches.branches).toEqual(["feature/x", "main"]);
    await run({ operation: "checkout", branch: "feature/x" });
    expect((await run({ operation: "status" })).branch).toBe("feature/x");

    await fs.writeFile(path.join(harness.workspace, "a.txt"), "stash me\n");
    const stash = await run({ operation: "stash", message: "wip" });
    expect(stash.result).toContain("wip");
    expect(await fs.readFile(path.join(harness.workspace, "a.txt"), "utf8")).toBe("one\ntwo\n");

    await fs.writeFile(path.join(harness.workspace, "a.txt"), "scratch\n");
    await run({ operation: "checkout", files: ["a.txt"] });
    expect(await fs.readFile(path.join(harness.workspace, "a.txt"), "utf8")).toBe("one\ntwo\n");
  });

  it("refuses option injection and shell metacharacters in every argument", async () => {
    const canary = path.join(harness.root, "git-canary");
    const attacks: Array<[Record<string, unknown>, string]> = [
      [{ operation: "checkout", branch: `--upload-pack=touch ${canary}` }, "git.option_injection"],
      [{ operation: "branch", branch: "-D" }, "git.option_injection"],
      [{ operation: "add", files: ["--exec=touch /tmp/x"] }, "git.option_injection"],
      [{ operation: "diff", paths: ["--output=/tmp/x"] }, "git.option_injection"],
      [{ operation: "log", paths: ["-p"] }, "git.option_injection"],
      [{ operation: "commit", message: "msg --no-verify" }, "git.option_injection"],
      [{ operation: "commit", message: "x", files: ["--receive-pack=evil"] }, "git.option_injection"],
      [{ operation: "stash", message: "--pager=less" }, "git.option_injection"],
      [{ operation: "checkout", branch: "x --editor=vim" }, "git.option_injection"],
      [{ operation: "add", files: [`a.txt; touch ${canary}`] }, "git.shell_metacharacters"],
      [{ operation: "add", files: [`$(touch ${canary})`] }, "git.shell_metacharacters"],
      [{ operation: "checkout", branch: "main|id" }, "git.shell_metacharacters"],
      [{ operation: "commit", message: `\`touch ${canary}\`` }, "git.shell_metacharacters"],
      [{ operation: "add", files: ["a.txt\nb.txt"] }, "git.shell_metacharacters"],
      [{ operation: "branch", branch: "bad..name" }, "git.invalid_branch"],
      [{ operation: "add", files: [":(top)../x"] }, "git.option_injection"],
      [{ operation: "checkout", files: ["../outside/file.txt"] }, "git.path_outside_workspace"],
      [{ operation: "add", paths: ["/etc/passwd"] }, "git.path_outside_workspace"],
    ];
    for (const [args, code] of attacks) {
      expect(errorCode(await harness.call("git_operations", args)), JSON.stringify(args)).toBe(code);
    }
    await expect(fs.access(canary)).rejects.toThrow();
    expect(git("branch", "--list").trim()).toBe("* main");
  });

  it("keeps cwd inside the workspace", async () => {
    for (const cwd of ["..", harness.outside, "/"]) {
      expect(errorCode(await harness.call("git_operations", { operation: "status", cwd }))).toBe(
        "git.cwd_outside_workspace",
      );
    }
  });

  it("commit and checkout ask for approval under risk:high; denial changes nothing", async () => {
    const strict = await createToolHarness({ require: ["risk:high"], decide: () => "denied" });
    try {
      execFileSync("git", ["init", "-q", "-b", "main"], { cwd: strict.workspace });
      const text = await strict.call("git_operations", { operation: "checkout", branch: "main" });
      expect(errorCode(text)).toBe("approval.denied");
      expect(strict.approvalRequests[0]).toMatchObject({ tool: "git_operations", reason: "risk:high" });
      expect(strict.approvalRequests[0]!.action).toContain("git checkout");
      expect(errorCode(await strict.call("git_operations", { operation: "status" }))).toBeNull();
    } finally {
      await strict.cleanup();
    }
  });
});

/** Git hardening must hold on its own (sandbox off) and inside the sandbox (where bwrap works here). */
const GIT_MODES: Array<"off" | "auto"> = (await hasWorkingSandbox()) ? ["off", "auto"] : ["off"];

describe.each(GIT_MODES)("git_operations under attack (sandbox %s)", (sandbox) => {
  let attacked: ToolHarness;
  const savedHome = process.env.HOME;
  const hostGit = (cwd: string, ...args: string[]) =>
    execFileSync("git", args, {
      cwd,
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: attacked.home, GIT_CONFIG_NOSYSTEM: "1" },
    });
  const markers = () => path.join(attacked.workspace, "markers");
  /** A script that leaves a marker named `kind` when anything runs it, passing stdin through. */
  async function plant(kind: string): Promise<string> {
    const script = path.join(attacked.workspace, `evil-${kind}.sh`);
    await fs.writeFile(script, `#!/bin/sh\ntouch ${path.join(markers(), kind)}\ncat\n`, { mode: 0o755 });
    return script;
  }
  const call = async (args: Record<string, unknown>, cwd?: string) =>
    attacked.call("git_operations", cwd ? { ...args, cwd } : args);
  async function everyOperation(cwd?: string): Promise<string[]> {
    await fs.writeFile(path.join(attacked.workspace, "a.txt"), `changed ${Math.random()}\n`);
    const texts: string[] = [];
    for (const args of [
      { operation: "status" },
      { operation: "diff" },
      { operation: "log", limit: 3 },
      { operation: "add", files: ["a.txt"] },
      { operation: "diff", cached: true },
      { operation: "commit", message: "attack" },
      { operation: "branch", branch: `b${texts.length}${Math.floor(Math.random() * 1e6)}` },
      { operation: "branch" },
      { operation: "checkout", files: ["a.txt"] },
      { operation: "checkout", branch: "main" },
      { operation: "stash", message: "wip" },
    ])
      texts.push(await call(args, cwd));
    return texts;
  }
  async function expectNoMarkers(): Promise<void> {
    expect(await fs.readdir(markers())).toEqual([]);
  }

  beforeEach(async () => {
    attacked = await createToolHarness({ tools: { shell: { sandbox } } });
    process.env.HOME = attacked.home;
    hostGit(attacked.workspace, "init", "-q", "-b", "main");
    hostGit(attacked.workspace, "config", "user.email", "magpie@test.invalid");
    hostGit(attacked.workspace, "config", "user.name", "Magpie Test");
    await fs.writeFile(path.join(attacked.workspace, "a.txt"), "one\n");
    hostGit(attacked.workspace, "add", "a.txt");
    hostGit(attacked.workspace, "commit", "-q", "-m", "initial");
    await fs.mkdir(markers());
  });
  afterEach(async () => {
    process.env.HOME = savedHome;
    await attacked.cleanup();
  });

  it("a planted filter driver (clean, smudge, process) never runs", async () => {
    const script = await plant("filter");
    await fs.writeFile(path.join(attacked.workspace, ".gitattributes"), "* filter=x\n");
    const config = path.join(attacked.workspace, ".git", "config");
    await fs.appendFile(
      config,
      `[filter "x"]\n\tclean = ${script}\n\tsmudge = ${script}\n\tprocess = ${script}\n\trequired = true\n`,
    );
    const texts = await everyOperation();
    await expectNoMarkers();
    expect(texts.filter((text) => errorCode(text) !== null)).toEqual([]);
  });

  it("a filter driver in a file the repository's config includes never runs", async () => {
    const script = await plant("included-filter");
    await fs.writeFile(path.join(attacked.workspace, ".gitattributes"), "* filter=inc\n");
    const included = path.join(attacked.workspace, "included.gitconfig");
    await fs.writeFile(included, `[filter "inc"]\n\tclean = ${script}\n\tsmudge = ${script}\n`);
    await fs.appendFile(path.join(attacked.workspace, ".git", "config"), `[include]\n\tpath = ${included}\n`);
    await everyOperation();
    await expectNoMarkers();
  });

  it("diff.external, diff.<driver>.command and diff.<driver>.textconv never run", async () => {
    const external = await plant("diff-external");
    const command = await plant("diff-command");
    const textconv = await plant("textconv");
    await fs.writeFile(path.join(attacked.workspace, ".gitattributes"), "*.txt diff=x\n");
    await fs.appendFile(
      path.join(attacked.workspace, ".git", "config"),
      `[diff]\n\texternal = ${external}\n[diff "x"]\n\tcommand = ${command}\n\ttextconv = ${textconv}\n`,
    );
    const texts = await everyOperation();
    await expectNoMarkers();
    const diff = JSON.parse(texts[1]!);
    expect(diff.diff).toContain("+changed");
  });

  it("hooks (pre-commit, post-commit, post-checkout, reference-transaction) and core.hooksPath never run", async () => {
    for (const hook of [
      "pre-commit",
      "post-commit",
      "post-checkout",
      "reference-transaction",
      "pre-auto-gc",
    ]) {
      await fs.copyFile(await plant(`hook-${hook}`), path.join(attacked.workspace, ".git", "hooks", hook));
    }
    const hooksDir = path.join(attacked.workspace, "myhooks");
    await fs.mkdir(hooksDir);
    await fs.copyFile(await plant("hookspath"), path.join(hooksDir, "pre-commit"));
    await fs.appendFile(
      path.join(attacked.workspace, ".git", "config"),
      `[core]\n\thooksPath = ${hooksDir}\n`,
    );
    const texts = await everyOperation();
    await expectNoMarkers();
    expect(errorCode(texts[5]!)).toBeNull();
  });

  it("core.fsmonitor, core.pager, log.showSignature with gpg.program never run", async () => {
    const fsmonitor = await plant("fsmonitor");
    const pager = await plant("pager");
    const gpg = await plant("gpg");
    await fs.appendFile(
      path.join(attacked.workspace, ".git", "config"),
      `[core]\n\tfsmonitor = ${fsmonitor}\n\tpager = ${pager}\n[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ${gpg}\n[commit]\n\tgpgsign = true\n`,
    );
    await everyOperation();
    await expectNoMarkers();
  });

  it("~/.gitconfig (alias, pager, fsmonitor, hooksPath, filter) is ignored", async () => {
    const script = await plant("global");
    const hooksDir = path.join(attacked.home, "hooks");
    await fs.mkdir(hooksDir);
    await fs.copyFile(script, path.join(hooksDir, "pre-commit"));
    await fs.writeFile(path.join(attacked.workspace, ".gitattributes"), "* filter=g\n");
    await fs.writeFile(
      path.join(attacked.home, ".gitconfig"),
      `[alias]\n\tst = !${script}\n[core]\n\tpager = ${script}\n\tfsmonitor = ${script}\n\thooksPath = ${hooksDir}\n[filter "g"]\n\tclean = ${script}\n\tsmudge = ${script}\n\trequired = true\n`,
    );
    await everyOperation();
    await expectNoMarkers();
  });

  it("an embedded bare repository in the workspace is refused (safe.bareRepository=explicit)", async () => {
    const bare = path.join(attacked.workspace, "evil.git");
    hostGit(attacked.workspace, "init", "-q", "--bare", bare);
    const script = await plant("bare");
    await fs.appendFile(
      path.join(bare, "config"),
      `[core]\n\tfsmonitor = ${script}\n\tworktree = ${attacked.workspace}\n`,
    );
    await fs.copyFile(script, path.join(bare, "hooks", "pre-commit"));
    for (const args of [{ operation: "status" }, { operation: "log" }, { operation: "diff" }]) {
      const text = await call(args, "evil.git");
      expect(errorCode(text), text).not.toBeNull();
      expect(text).toMatch(/bare repository/);
    }
    await expectNoMarkers();
  });

  it("a repository whose core.worktree points outside the workspace is refused", async () => {
    await fs.appendFile(
      path.join(attacked.workspace, ".git", "config"),
      `[core]\n\tworktree = ${attacked.outside}\n`,
    );
    const text = await call({ operation: "status" });
    expect(errorCode(text)).toBe("git.repository_outside_workspace");
  });
});

describe.each(GIT_MODES)("git_operations and a parent repository (sandbox %s)", (sandbox) => {
  it("never uses a repository above the workspace: clear error, stash leaves the parent untouched", async () => {
    const nested = await createToolHarness({ tools: { shell: { sandbox } } });
    try {
      const parentGit = (...args: string[]) =>
        execFileSync("git", args, {
          cwd: nested.root,
          encoding: "utf8",
          env: { PATH: process.env.PATH, HOME: nested.home },
        });
      parentGit("init", "-q", "-b", "main");
      parentGit("config", "user.email", "p@test.invalid");
      parentGit("config", "user.name", "Parent");
      await fs.writeFile(path.join(nested.outside, "file.txt"), "committed\n");
      parentGit("add", "outside/file.txt");
      parentGit("commit", "-q", "-m", "parent");
      await fs.writeFile(path.join(nested.outside, "file.txt"), "precious uncommitted work\n");
      for (const operation of ["status", "stash", "log", "diff"]) {
        const text = await nested.call("git_operations", { operation });
        expect(errorCode(text), text).toBe("git.not_a_repository");
        expect(text).toContain("git init");
      }
      expect(await fs.readFile(path.join(nested.outside, "file.txt"), "utf8")).toBe(
        "precious uncommitted work\n",
      );
      expect(parentGit("stash", "list")).toBe("");
      // `git init` in the workspace (through the shell tool) is fine and then git_operations works there.
      await nested.call("shell", { command: "git init -q -b main" });
      expect(errorCode(await nested.call("git_operations", { operation: "status" }))).toBeNull();
    } finally {
      await nested.cleanup();
    }
  });
});
