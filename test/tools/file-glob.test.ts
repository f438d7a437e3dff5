import fs from "node:fs/promises";
import path from "node:path";
import picomatch from "picomatch";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { globMatcher } from "../../src/tools/files/glob.js";
import { LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";
import { createToolHarness, errorCode, type ToolHarness } from "./tool-harness.js";

const matcher = (glob: string, options: { basename?: boolean } = {}) => {
  const compiled = globMatcher(glob, options);
  if (typeof compiled === "string") throw new Error(compiled);
  return compiled;
};

/** Globs and paths where the RE2 translation must agree with picomatch (dot: true), as file_find used before. */
const AGREED: Array<[string, string, boolean]> = [
  ["**/*.ts", "src/sub/b.ts", true],
  ["**/*.ts", "a.ts", true],
  ["**/*.ts", "a.tsx", false],
  ["*.ts", "src/a.ts", false],
  ["src/**/config.*", "src/config.ts", true],
  ["src/**/config.*", "src/a/b/config.yaml", true],
  ["src/**/config.*", "lib/config.ts", false],
  ["a/**", "a", true],
  ["a/**", "a/b/c", true],
  ["a/**", "ab/c", false],
  ["a/**/b", "a/b", true],
  ["a/**/b", "a/x/y/b", true],
  ["**", "a/b/.env", true],
  ["**/.env", ".env", true],
  ["*", ".hidden", true],
  ["a**b", "axxb", true],
  ["a**b", "ax/xb", false],
  ["{src,test}/**/*.ts", "test/x/y.ts", true],
  ["{src,test}/**/*.ts", "lib/x/y.ts", false],
  ["*.{ts,js}", "a.js", true],
  ["*.{ts,js}", "a.md", false],
  ["?.ts", "a.ts", true],
  ["?.ts", "ab.ts", false],
  ["[a-c].ts", "b.ts", true],
  ["[a-c].ts", "d.ts", false],
  ["a\\*b", "a*b", true],
  ["a\\*b", "axb", false],
  ["./src/*.ts", "src/a.ts", true],
  ["!*.ts", "a.md", true],
  ["!*.ts", "a.ts", false],
  ["{a}", "{a}", true],
  ["notes (1).md", "notes (1).md", true],
  ["a+b.md", "a+b.md", true],
  ["price$.txt", "price$.txt", true],
];

describe("globs run on RE2", () => {
  it.each(AGREED)("%s against %s is %s, as picomatch says", (glob, file, expected) => {
    expect(picomatch(glob, { dot: true })(file)).toBe(expected);
    expect(matcher(glob)(file)).toBe(expected);
  });

  it("a negated class excludes its characters and never crosses a slash; basename matches the last segment", () => {
    expect(matcher("[!a]*.ts")("b.ts")).toBe(true);
    expect(matcher("[!a]*.ts")("a.ts")).toBe(false);
    expect(matcher("a[!x]b")("a/b")).toBe(false);
    expect(matcher("*.ts", { basename: true })("src/deep/a.ts")).toBe(true);
    expect(matcher("*.ts", { basename: true })("src/a.md")).toBe(false);
  });

  it("extglobs, ranges and overlong globs are refused with what to write instead", () => {
    expect(globMatcher("+(a|aa)")).toMatch(/extglobs.*\{a,b\}/);
    expect(globMatcher("file{1..3}.txt")).toMatch(/\{1,2,3\}/);
    expect(globMatcher("*".repeat(201))).toMatch(/at most 200/);
  });

  it("globs that stall picomatch's regexes match a long name at once", () => {
    const name = `${"a".repeat(250)}!`;
    for (const glob of [
      "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*x", // picomatch: 20 s on a 31-character name
      `${"{a,aa}".repeat(30)}x`,
      `*a${"?".repeat(40)}`,
      "**/**/**/**/**/**/**/**/**/**/x",
    ]) {
      const match = matcher(glob);
      let result = true;
      expect(
        timed(() => (result = match(`${name}/${name}/${name}`))),
        glob,
      ).toBeLessThan(LINEAR_BOUND_MS / 10);
      expect(result).toBe(false);
    }
  });
});

describe("file_find and file_grep with model-supplied globs", () => {
  let harness: ToolHarness;
  beforeEach(async () => {
    harness = await createToolHarness();
    await fs.mkdir(path.join(harness.workspace, "deep"), { recursive: true });
    for (let index = 0; index < 300; index++)
      await fs.writeFile(path.join(harness.workspace, "deep", `${"a".repeat(200)}${index}!`), "needle\n");
    await fs.writeFile(path.join(harness.workspace, "deep", "x.md"), "needle\n");
  });
  afterEach(() => harness.cleanup());

  it("a catastrophic glob over 300 long names answers at once, the loop kept turning", async () => {
    let last = performance.now();
    let maxLag = 0;
    const heartbeat = setInterval(() => {
      const now = performance.now();
      maxLag = Math.max(maxLag, now - last);
      last = now;
    }, 10);
    try {
      const found = await harness.call("file_find", { pattern: "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*x" });
      expect(found).toContain("No files match");
      const grep = JSON.parse(
        await harness.call("file_grep", { pattern: "needle", glob: "{*a*a*a*a*a*a*a*a*a*a*x,*.md}" }),
      );
      expect(grep.matches).toEqual([{ path: "deep/x.md", line: 1, text: "needle" }]);
    } finally {
      clearInterval(heartbeat);
    }
    expect(maxLag).toBeLessThan(500);
    expect(await harness.call("file_find", { pattern: "deep/*.md" })).toContain("deep/x.md");
  });

  it("a glob RE2 can't take is a tool error the model can act on", async () => {
    expect(errorCode(await harness.call("file_find", { pattern: "@(a|b).md" }))).toBe("find.invalid_glob");
    expect(errorCode(await harness.call("file_grep", { pattern: "x", glob: "+(a|b)" }))).toBe(
      "grep.invalid_glob",
    );
  });
});
