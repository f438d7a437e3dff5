import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolHarness, errorCode, type ToolHarness } from "./tool-harness.js";

/** A 3×2 PNG (smallest valid header + IDAT is enough for image-size). */
const PNG_3x2 = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAYAAACddGYaAAAAEklEQVR4nGNgYGD4z8DAwMAAAA0AAVq3ry8AAAAASUVORK5CYII=",
  "base64",
);

let harness: ToolHarness;
beforeEach(async () => {
  harness = await createToolHarness();
});
afterEach(async () => {
  await harness.cleanup();
});

const inWorkspace = (...parts: string[]) => path.join(harness.workspace, ...parts);

describe("file_read", () => {
  it("returns line-numbered text and honours offset/limit", async () => {
    await fs.writeFile(
      inWorkspace("lines.txt"),
      Array.from({ length: 12 }, (_, index) => `line ${index + 1}`).join("\n"),
    );
    const all = await harness.call("file_read", { path: "lines.txt" });
    expect(all).toContain("(lines 1–12 of 12)");
    expect(all).toMatch(/^ 1\tline 1$/m);
    expect(all).toMatch(/^12\tline 12$/m);
    const slice = await harness.call("file_read", { path: "lines.txt", offset: 5, limit: 3 });
    expect(slice).toContain("(lines 5–7 of 12) — more: offset 8");
    expect(slice).toMatch(/^5\tline 5$/m);
    expect(slice).not.toContain("line 8");
  });

  it("describes an image instead of dumping its bytes", async () => {
    await fs.writeFile(inWorkspace("pic.png"), PNG_3x2);
    const text = await harness.call("file_read", { path: "pic.png" });
    expect(text).toContain("is an image file (png, 3×2 px");
    expect(text).not.toContain("PNG\r\n");
  });

  it("refuses files above the size cap and missing files with their codes", async () => {
    const small = await createToolHarness({ tools: { files: { maxFileSizeBytes: 100 } } });
    try {
      await fs.writeFile(path.join(small.workspace, "big.txt"), "x".repeat(101));
      expect(errorCode(await small.call("file_read", { path: "big.txt" }))).toBe("file.too_large");
      expect(errorCode(await small.call("file_write", { path: "new.txt", content: "y".repeat(101) }))).toBe(
        "file.too_large",
      );
      expect(errorCode(await small.call("file_read", { path: "nope.txt" }))).toBe("file.not_found");
    } finally {
      await small.cleanup();
    }
  });
});

describe("file_write", () => {
  it("creates parents and returns a unified diff", async () => {
    const text = await harness.call("file_write", { path: "deep/er/new.txt", content: "hello\n" });
    expect(text).toContain("Created deep/er/new.txt");
    expect(text).toContain("+hello");
    expect(await fs.readFile(inWorkspace("deep/er/new.txt"), "utf8")).toBe("hello\n");
  });

  it("requires a prior read before overwriting, and a fresh one after an outside change", async () => {
    await fs.writeFile(inWorkspace("a.txt"), "one\ntwo\n");
    const refused = await harness.call("file_write", { path: "a.txt", content: "new\n" });
    expect(errorCode(refused)).toBe("file.not_read");
    expect(await fs.readFile(inWorkspace("a.txt"), "utf8")).toBe("one\ntwo\n");

    await harness.call("file_read", { path: "a.txt" });
    // Another session's read doesn't count.
    expect(
      errorCode(await harness.call("file_write", { path: "a.txt", content: "x\n" }, "other:session")),
    ).toBe("file.not_read");
    const written = await harness.call("file_write", { path: "a.txt", content: "one\nTWO\n" });
    expect(errorCode(written)).toBeNull();
    expect(written).toContain("-two");
    expect(written).toContain("+TWO");
    expect(written).toContain("--- a/a.txt");

    // Changed on disk since the last read → must read again.
    await new Promise((resolve) => setTimeout(resolve, 15));
    await fs.writeFile(inWorkspace("a.txt"), "changed elsewhere\n");
    expect(errorCode(await harness.call("file_write", { path: "a.txt", content: "z\n" }))).toBe(
      "file.not_read",
    );
  });
});

describe("file_edit", () => {
  it("reports how many times old_text matched and honours replace_all", async () => {
    await fs.writeFile(inWorkspace("e.txt"), "foo bar\nfoo baz\nqux\n");
    const none = await harness.call("file_edit", { path: "e.txt", old_text: "nothing", new_text: "x" });
    expect(errorCode(none)).toBe("file.edit_no_match");
    expect(none).toContain("0 matches");
    const twice = await harness.call("file_edit", { path: "e.txt", old_text: "foo", new_text: "FOO" });
    expect(errorCode(twice)).toBe("file.edit_ambiguous");
    expect(twice).toContain("matches 2 times");
    expect(await fs.readFile(inWorkspace("e.txt"), "utf8")).toBe("foo bar\nfoo baz\nqux\n");

    const once = await harness.call("file_edit", { path: "e.txt", old_text: "qux", new_text: "$& $1 quux" });
    expect(once).toContain("1 replacement");
    // Replacement text is literal: `$&` is not a regex back-reference.
    expect(await fs.readFile(inWorkspace("e.txt"), "utf8")).toBe("foo bar\nfoo baz\n$& $1 quux\n");

    const all = await harness.call("file_edit", {
      path: "e.txt",
      old_text: "foo",
      new_text: "FOO",
      replace_all: true,
    });
    expect(all).toContain("2 replacements");
    expect(await fs.readFile(inWorkspace("e.txt"), "utf8")).toBe("FOO bar\nFOO baz\n$& $1 quux\n");
  });
});

describe("file_append", () => {
  it("appends, creating the file when missing", async () => {
    await harness.call("file_append", { path: "log/a.log", content: "one\n" });
    await harness.call("file_append", { path: "log/a.log", content: "two\n" });
    expect(await fs.readFile(inWorkspace("log/a.log"), "utf8")).toBe("one\ntwo\n");
  });
});

describe("file_list / file_find", () => {
  beforeEach(async () => {
    await fs.mkdir(inWorkspace("src/sub"), { recursive: true });
    await fs.mkdir(inWorkspace("node_modules/pkg"), { recursive: true });
    await fs.mkdir(inWorkspace(".git"), { recursive: true });
    await fs.writeFile(inWorkspace(".gitignore"), "node_modules/\n*.log\n");
    await fs.writeFile(inWorkspace(".magpieignore"), "secret-notes.md\n");
    await fs.writeFile(inWorkspace("src/sub/.gitignore"), "generated.ts\n");
    for (const file of [
      "src/a.ts",
      "src/sub/b.ts",
      "src/sub/generated.ts",
      "node_modules/pkg/index.js",
      "debug.log",
      "secret-notes.md",
      "README.md",
      ".git/HEAD",
    ]) {
      await fs.writeFile(inWorkspace(file), `// ${file}\n`);
    }
  });

  it("file_list honours .gitignore (nested) and .magpieignore", async () => {
    const text = await harness.call("file_list", { recursive: true });
    expect(text).toContain("src/a.ts");
    expect(text).toContain("src/sub/b.ts");
    expect(text).toContain("README.md");
    for (const hidden of ["node_modules", "debug.log", "secret-notes.md", "generated.ts", ".git/"])
      expect(text).not.toContain(hidden);
    const everything = await harness.call("file_list", { recursive: true, include_ignored: true });
    expect(everything).toContain("debug.log");
    // Ignore files of the workspace still apply when listing a subdirectory.
    await fs.writeFile(inWorkspace("src/trace.log"), "x");
    expect(await harness.call("file_list", { path: "src" })).not.toContain("trace.log");
  });

  it("file_find matches globs newest first", async () => {
    const older = new Date(Date.now() - 60_000);
    await fs.utimes(inWorkspace("src/a.ts"), older, older);
    const text = await harness.call("file_find", { pattern: "**/*.ts" });
    const lines = text.split("\n").slice(1);
    expect(lines[0]).toMatch(/^src\/sub\/b\.ts/);
    expect(lines[1]).toMatch(/^src\/a\.ts/);
    expect(text).not.toContain("generated.ts");
    expect(await harness.call("file_find", { pattern: "*.nothing" })).toContain("No files match");
  });
});

describe("file_grep", () => {
  it("returns structured matches with line numbers, glob and case options, and a result cap", async () => {
    await fs.mkdir(inWorkspace("src"), { recursive: true });
    await fs.writeFile(inWorkspace("src/a.ts"), "const x = 1;\n// TODO fix\nconst todo = 2;\n");
    await fs.writeFile(inWorkspace("notes.md"), "TODO: write docs\n");
    await fs.writeFile(inWorkspace(".env"), "TODO_TOKEN=hunter2-secret\n");
    const result = JSON.parse(await harness.call("file_grep", { pattern: "TODO" }));
    expect(result.matches).toEqual(
      expect.arrayContaining([
        { path: "src/a.ts", line: 2, text: "// TODO fix" },
        { path: "notes.md", line: 1, text: "TODO: write docs" },
      ]),
    );
    // .env is a sensitive file: grep must not leak it.
    expect(JSON.stringify(result)).not.toContain("hunter2");
    expect(result.skipped_by_guard).toContain(".env");

    const insensitive = JSON.parse(
      await harness.call("file_grep", { pattern: "todo", case_sensitive: false, glob: "*.ts" }),
    );
    expect(insensitive.matches.map((match: { line: number }) => match.line)).toEqual([2, 3]);
    const capped = JSON.parse(await harness.call("file_grep", { pattern: "TODO|todo", max_results: 1 }));
    expect(capped.count).toBe(1);
    expect(capped.truncated).toBe(true);
    expect(errorCode(await harness.call("file_grep", { pattern: "(" }))).toBe("grep.invalid_regex");
  });
});

describe("apply_patch", () => {
  it("applies a multi-file patch (modify, create, delete)", async () => {
    await fs.writeFile(inWorkspace("one.txt"), "a\nb\nc\n");
    await fs.writeFile(inWorkspace("gone.txt"), "bye\n");
    const patch = [
      "--- a/one.txt",
      "+++ b/one.txt",
      "@@ -1,3 +1,3 @@",
      " a",
      "-b",
      "+B",
      " c",
      "--- /dev/null",
      "+++ b/new/two.txt",
      "@@ -0,0 +1,1 @@",
      "+fresh",
      "--- a/gone.txt",
      "+++ /dev/null",
      "@@ -1,1 +0,0 @@",
      "-bye",
      "",
    ].join("\n");
    const text = await harness.call("apply_patch", { patch });
    expect(errorCode(text)).toBeNull();
    expect(await fs.readFile(inWorkspace("one.txt"), "utf8")).toBe("a\nB\nc\n");
    expect(await fs.readFile(inWorkspace("new/two.txt"), "utf8")).toBe("fresh\n");
    await expect(fs.access(inWorkspace("gone.txt"))).rejects.toThrow();
  });

  it("is atomic: one failing hunk leaves every file untouched", async () => {
    await fs.writeFile(inWorkspace("x.txt"), "1\n2\n3\n");
    await fs.writeFile(inWorkspace("y.txt"), "alpha\nbeta\n");
    const patch = [
      "--- a/x.txt",
      "+++ b/x.txt",
      "@@ -1,3 +1,3 @@",
      " 1",
      "-2",
      "+two",
      " 3",
      "--- /dev/null",
      "+++ b/created.txt",
      "@@ -0,0 +1,1 @@",
      "+should not exist",
      "--- a/y.txt",
      "+++ b/y.txt",
      "@@ -1,2 +1,2 @@",
      " alpha",
      "-GAMMA",
      "+delta",
      "",
    ].join("\n");
    const text = await harness.call("apply_patch", { patch });
    expect(errorCode(text)).toBe("patch.does_not_apply");
    expect(text).toContain("y.txt");
    expect(await fs.readFile(inWorkspace("x.txt"), "utf8")).toBe("1\n2\n3\n");
    expect(await fs.readFile(inWorkspace("y.txt"), "utf8")).toBe("alpha\nbeta\n");
    await expect(fs.access(inWorkspace("created.txt"))).rejects.toThrow();
  });

  it("refuses garbage and patches that escape the workspace", async () => {
    expect(errorCode(await harness.call("apply_patch", { patch: "not a diff" }))).toBe("patch.invalid");
    const low = await createToolHarness({ level: "low" });
    try {
      const escapingPatch = ["--- /dev/null", "+++ b/../outside/evil.txt", "@@ -0,0 +1,1 @@", "+x", ""].join(
        "\n",
      );
      expect(errorCode(await low.call("apply_patch", { patch: escapingPatch }))).toBe(
        "file.outside_workspace_write",
      );
      await expect(fs.access(path.join(low.outside, "evil.txt"))).rejects.toThrow();
    } finally {
      await low.cleanup();
    }
  });
});

describe("image_info", () => {
  it("returns format, dimensions, size and optional base64", async () => {
    await fs.writeFile(inWorkspace("pic.png"), PNG_3x2);
    const info = JSON.parse(await harness.call("image_info", { path: "pic.png", include_base64: true }));
    expect(info).toMatchObject({
      path: "pic.png",
      format: "png",
      width: 3,
      height: 2,
      size_bytes: PNG_3x2.length,
    });
    expect(Buffer.from(info.base64, "base64").equals(PNG_3x2)).toBe(true);
    await fs.writeFile(inWorkspace("text.png"), "not an image");
    expect(errorCode(await harness.call("image_info", { path: "text.png" }))).toBe("image.unrecognized");
  });
});
