import { PassThrough } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CliEnv } from "../../src/cli/cli-env.js";
import { run } from "../../src/cli/commands/memory.js";
import { Store } from "../../src/store/index.js";
import { tempDir, testConfig } from "./helpers.js";

describe("magpie memory (CLI)", () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    temp = tempDir();
  });
  afterEach(() => temp.cleanup());

  async function magpie(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = "";
    let err = "";
    stdout.on("data", (chunk) => {
      out += chunk;
    });
    stderr.on("data", (chunk) => {
      err += chunk;
    });
    const env: CliEnv = {
      loadConfig: () => testConfig(temp.dir),
      openStore: (config) => Store.open(config.dataDir),
      stdout,
      stderr,
    };
    const code = await run(argv, env);
    return { code, stdout: out, stderr: err };
  }

  it("adds, lists, searches, exports as JSON lines and forgets", async () => {
    expect(await magpie("add", "owner.city", "The", "owner", "lives", "in", "Ghent.")).toMatchObject({
      code: 0,
      stdout: "Added owner.city (keyword).\n",
    });
    await magpie("add", "--category", "daily", "standup", "Standup moved to 9:30 today.");
    const list = await magpie("list");
    expect(list.stdout).toMatch(
      /standup \[daily\] {2}Standup moved to 9:30 today\.\n.*owner\.city \[core\]/s,
    );
    const search = await magpie("search", "where", "does", "the", "owner", "live", "NEAR(");
    expect(search.code).toBe(0);
    expect(search.stdout).toMatch(/^\d\.\d{4} {2}owner\.city \[core\] {2}The owner lives in Ghent\./);

    const exported = await magpie("export");
    const lines = exported.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      agent: "main",
      key: "owner.city",
      category: "core",
      content: "The owner lives in Ghent.",
    });
    expect(lines[0].created_at).toMatch(/^\d{4}-\d\d-\d\dT/);

    expect(await magpie("forget", "owner.city")).toMatchObject({ code: 0, stdout: "Forgot owner.city.\n" });
    expect(await magpie("forget", "owner.city")).toMatchObject({ code: 1 });
    expect((await magpie("export")).stdout.trim().split("\n")).toHaveLength(1);
  });

  it("explains bad usage", async () => {
    expect((await magpie()).code).toBe(2);
    expect(await magpie("add", "--category", "forever", "k", "v")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("core, daily, conversation"),
    });
    expect(await magpie("search")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("needs a query"),
    });
    expect(await magpie("frobnicate")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("Unknown memory command"),
    });
  });
});
