import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { installDir, isMagpieState, magpieStatePaths } from "../../src/security/magpie-state.js";
import { createToolHarness, errorCode, type ToolHarness } from "../tools/tool-harness.js";

const CONFIG_SECRET = "123456:config-bot-token-SECRET";
const ENV_SECRET = "sk-env-llm-key-SECRET";
const DB_SECRET = "db-row-SECRET";
const SPILL_SECRET = "spilled-output-SECRET";
const CONFIG_TEXT = `channels:\n  telegram:\n    token: "${CONFIG_SECRET}"\n    allowFrom: ["111"]\n`;
const LEVELS = ["low", "medium", "high"] as const;

const harnesses: ToolHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((harness) => harness.cleanup()));
});

/**
 * A harness whose Magpie "loaded" root/config/magpie.yaml and root/.env, with a database and a spill file in
 * dataDir (root/data) and the fake home linking to the root (for `~` forms). Warn approvals are required and
 * always granted, so only a Deny can stop a call.
 */
async function stateHarness(
  level: (typeof LEVELS)[number],
  extra: Parameters<typeof createToolHarness>[0] = {},
) {
  const harness = await createToolHarness({
    level,
    require: ["guard:warn"],
    decide: () => "approved",
    sourcePath: "config/magpie.yaml",
    envFiles: [".env"],
    ...extra,
  });
  harnesses.push(harness);
  const { root } = harness;
  await fs.mkdir(path.join(root, "config"), { recursive: true });
  await fs.writeFile(path.join(root, "config", "magpie.yaml"), CONFIG_TEXT);
  await fs.writeFile(path.join(root, ".env"), `OPENAI_API_KEY=${ENV_SECRET}\n`);
  await fs.mkdir(path.join(root, "data", "spill"), { recursive: true });
  await fs.writeFile(path.join(root, "data", "magpie.db"), `SQLite format 3\n${DB_SECRET}\n`);
  await fs.writeFile(path.join(root, "data", "spill", "spill-0123456789abcdef.txt"), `${SPILL_SECRET}\n`);
  await fs.symlink(root, path.join(harness.home, "magpie"));
  return harness;
}

interface Target {
  name: string;
  /** Absolute path of the protected file, and its form relative to the harness root. */
  absolute(harness: ToolHarness): string;
  relative: string;
  secret?: string;
}

const FILE_TARGETS: Target[] = [
  {
    name: "config file",
    absolute: (h) => path.join(h.root, "config/magpie.yaml"),
    relative: "config/magpie.yaml",
    secret: CONFIG_SECRET,
  },
  { name: "loaded .env", absolute: (h) => path.join(h.root, ".env"), relative: ".env", secret: ENV_SECRET },
  {
    name: "database",
    absolute: (h) => path.join(h.root, "data/magpie.db"),
    relative: "data/magpie.db",
    secret: DB_SECRET,
  },
  {
    name: "spill file",
    absolute: (h) => path.join(h.root, "data/spill/spill-0123456789abcdef.txt"),
    relative: "data/spill/spill-0123456789abcdef.txt",
    secret: SPILL_SECRET,
  },
];

/** Every way of naming the target: absolute, `..` traversal, a symlink in the workspace, `~`. */
async function pathForms(harness: ToolHarness, target: Target): Promise<string[]> {
  const link = `link-${target.relative.replaceAll("/", "_")}`;
  await fs.symlink(target.absolute(harness), path.join(harness.workspace, link)).catch(() => undefined);
  return [
    target.absolute(harness),
    `../${target.relative}`,
    `sub/../../${target.relative}`,
    `${harness.workspace}/../${target.relative}`,
    link,
    `~/magpie/${target.relative}`,
  ];
}

/** One call per file tool, reading or writing `file`; write payloads that would change it if let through. */
function everyToolOn(file: string): Array<{ tool: string; args: Record<string, unknown> }> {
  const patchPath = file.startsWith("/") ? file : `a/${file}`;
  const patchNew = file.startsWith("/") ? file : `b/${file}`;
  return [
    { tool: "file_read", args: { path: file } },
    { tool: "image_info", args: { path: file, include_base64: true } },
    { tool: "file_grep", args: { pattern: "SECRET", path: file } },
    { tool: "file_list", args: { path: file } },
    { tool: "file_find", args: { pattern: "**", path: file } },
    { tool: "file_write", args: { path: file, content: "replaced" } },
    { tool: "file_append", args: { path: file, content: "\nappended: true\n" } },
    { tool: "file_edit", args: { path: file, old_text: "SECRET", new_text: "PWNED", replace_all: true } },
    { tool: "apply_patch", args: { patch: `--- ${patchPath}\n+++ ${patchNew}\n@@ -1,1 +1,1 @@\n-x\n+y\n` } },
  ];
}

async function snapshot(harness: ToolHarness): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const target of FILE_TARGETS) out[target.name] = await fs.readFile(target.absolute(harness), "utf8");
  return out;
}

describe("file.magpie_state: config, .env, database and spill refused to every file tool at every level", () => {
  for (const level of LEVELS) {
    for (const target of FILE_TARGETS) {
      it(`${target.name} at ${level}`, async () => {
        const harness = await stateHarness(level);
        await fs.mkdir(path.join(harness.workspace, "sub"));
        const before = await snapshot(harness);
        for (const form of await pathForms(harness, target)) {
          for (const call of everyToolOn(form)) {
            const text = await harness.call(call.tool, call.args);
            expect(errorCode(text), `${call.tool} ${form}`).toBe("file.magpie_state");
            expect(text).toContain("ask the owner to change the configuration by hand");
            if (target.secret) expect(text).not.toContain(target.secret);
          }
        }
        expect(harness.approvalRequests).toEqual([]);
        expect(await snapshot(harness)).toEqual(before);
        expect(harness.store.audit.recent(1)[0]).toMatchObject({ verdict: "deny", outcome: "denied" });
      });
    }
  }
});

describe("file.magpie_state: directories and the install directory", () => {
  for (const level of LEVELS) {
    it(`dataDir, the spill dir and Magpie's install dir are refused at ${level}`, async () => {
      const harness = await stateHarness(level);
      const install = installDir();
      const targets = [
        path.join(harness.root, "data"),
        path.join(harness.root, "data", "spill"),
        "../data",
        "~/magpie/data/spill",
        install,
        path.join(install, "package.json"),
        path.join(install, "src", "config", "load.ts"),
        path.join(install, "node_modules"),
      ];
      for (const target of targets) {
        for (const call of everyToolOn(target)) {
          const text = await harness.call(call.tool, call.args);
          expect(errorCode(text), `${call.tool} ${target}`).toBe("file.magpie_state");
        }
      }
      // A new file planted in the install directory or dataDir is refused the same way.
      for (const planted of [path.join(install, "planted.js"), "../data/new.db"]) {
        const text = await harness.call("file_write", { path: planted, content: "x" });
        expect(errorCode(text), planted).toBe("file.magpie_state");
      }
      await expect(fs.access(path.join(install, "planted.js"))).rejects.toThrow();
      await expect(fs.access(path.join(harness.root, "data", "new.db"))).rejects.toThrow();
      expect(harness.approvalRequests).toEqual([]);
    });
  }

  it("file_edit on the config to add a stranger to allowFrom is refused; the file is unchanged", async () => {
    const harness = await stateHarness("high");
    const config = path.join(harness.root, "config", "magpie.yaml");
    for (const target of [config, "../config/magpie.yaml", "~/magpie/config/magpie.yaml"]) {
      const text = await harness.call("file_edit", {
        path: target,
        old_text: 'allowFrom: ["111"]',
        new_text: 'allowFrom: ["111", "666-stranger"]',
      });
      expect(errorCode(text)).toBe("file.magpie_state");
    }
    expect(await fs.readFile(config, "utf8")).toBe(CONFIG_TEXT);
  });

  it("file_write replacing data/magpie.db is refused, also after a read attempt", async () => {
    const harness = await stateHarness("high");
    const database = path.join(harness.root, "data", "magpie.db");
    expect(errorCode(await harness.call("file_read", { path: database }))).toBe("file.magpie_state");
    const text = await harness.call("file_write", { path: "../data/magpie.db", content: "empty database" });
    expect(errorCode(text)).toBe("file.magpie_state");
    expect(await fs.readFile(database, "utf8")).toContain(DB_SECRET);
  });
});

describe("file.magpie_state inside a directory the guard lets through", () => {
  it("an allowed path holding the config, .env and dataDir: list, find and grep never show them", async () => {
    // ".." from the workspace is the harness root, which holds workspace/, config/, .env and data/.
    const harness = await stateHarness("high", { tools: { files: { allowedPaths: [".."] } } });
    await fs.writeFile(path.join(harness.root, "README.txt"), "public notes\n");
    await fs.writeFile(path.join(harness.workspace, "todo.txt"), "mention SECRET here\n");
    const listing = await harness.call("file_list", { path: harness.root, recursive: true });
    expect(errorCode(listing)).toBeNull();
    expect(listing).toContain("README.txt");
    expect(listing).toContain("workspace/todo.txt");
    for (const hidden of ["magpie.yaml", ".env", "magpie.db", "spill", "data/"])
      expect(listing, hidden).not.toContain(hidden);
    expect(listing).toContain("3 hidden by file.magpie_state");
    const found = await harness.call("file_find", { pattern: "**", path: ".." });
    expect(found).toContain("README.txt");
    for (const hidden of ["magpie.yaml", ".env", "magpie.db", "spill-"])
      expect(found, hidden).not.toContain(hidden);
    const grep = JSON.parse(await harness.call("file_grep", { pattern: "SECRET", path: harness.root }));
    expect(grep.matches.map((match: { path: string }) => match.path)).toEqual(["todo.txt"]);
    expect(JSON.stringify(grep)).not.toMatch(/magpie\.yaml|\.env|magpie\.db|spill-/);
    // The directories themselves are still refused when named.
    expect(errorCode(await harness.call("file_list", { path: "../data" }))).toBe("file.magpie_state");
    expect(errorCode(await harness.call("file_read", { path: "../.env" }))).toBe("file.magpie_state");
  });

  it("an allowed path holding the install directory: the install directory is not listed or searched", async () => {
    const install = installDir();
    const parent = path.dirname(install);
    const harness = await createToolHarness({ level: "high", tools: { files: { allowedPaths: [parent] } } });
    harnesses.push(harness);
    // The parent may be a crowded directory (a checkout in /tmp): the whole listing, so the note is in it.
    const listing = await harness.call("file_list", { path: parent, max_entries: 5000 });
    expect(errorCode(listing)).toBeNull();
    expect(listing.split("\n").slice(1)).not.toContain(`${path.basename(install)}/`);
    expect(listing).toContain("hidden by file.magpie_state");
    const grep = JSON.parse(
      await harness.call("file_grep", { pattern: "magpie", path: parent, glob: "package.json" }),
    );
    // Inside the install directory, not a sibling whose name starts the same ("/work/ci2" beside "/work/ci").
    const inside = (file: string) => file === install || file.startsWith(`${install}${path.sep}`);
    expect(grep.matches.filter((match: { path: string }) => inside(match.path))).toEqual([]);
  });

  it("a grep of the workspace that contains a symlink to the config does not read it", async () => {
    const harness = await stateHarness("high");
    await fs.symlink(path.join(harness.root, "config/magpie.yaml"), path.join(harness.workspace, "cfg.yaml"));
    const grep = await harness.call("file_grep", { pattern: "token" });
    expect(grep).not.toContain(CONFIG_SECRET);
    expect(JSON.parse(grep).matches).toEqual([]);
  });
});

describe("magpieStatePaths", () => {
  it("protects config, .env, dataDir and the install dir, except the workspace and allowed paths inside them", () => {
    const paths = magpieStatePaths(
      {
        sourcePath: "/opt/magpie/config/magpie.yaml",
        envFiles: ["/opt/magpie/.env"],
        dataDir: "/opt/magpie/data",
        workspace: "/opt/magpie/data/workspace",
        tools: { files: { allowedPaths: ["~/projects"] } } as never,
      },
      "/home/pi",
    );
    expect(isMagpieState("/opt/magpie/data/magpie.db", paths)).toBe(true);
    expect(isMagpieState("/opt/magpie/data/workspace/notes.md", paths)).toBe(false);
    expect(isMagpieState("/opt/magpie/config/magpie.yaml", paths)).toBe(true);
    expect(isMagpieState("/home/pi/projects/x", paths)).toBe(false);
    expect(isMagpieState(installDir(), paths)).toBe(true);
  });
});
