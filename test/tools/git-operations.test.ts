import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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
