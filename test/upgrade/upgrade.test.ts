import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";

/**
 * `magpie upgrade` end to end, on a git-checkout install made from this repository: an "upstream" clone where
 * releases are committed and tagged, an install cloned from it at v0.1.0 running the build under test
 * (dist/bundle), a Telegram fake and an LLM fake. Each release is built for real from its commit with
 * scripts/bundle.mjs (MAGPIE_UPGRADE_BUILD: node_modules linked from this checkout instead of `npm ci`, which
 * a real upgrade runs). Three releases: a good one, one whose main.js throws at load, one whose migration fails.
 */

const OWNER = 7001;
const REPO = path.resolve(".");

let root: string;
let upstream: string;
let install: string;
let dataDir: string;
let configFile: string;
let runDir: string;
let telegram: FakeTelegram;
let llm: OpenAiFake;
let first: ChildProcess | null = null;
let environment: NodeJS.ProcessEnv;

const git = (cwd: string, ...args: string[]) => execa("git", args, { cwd });

async function release(version: string, change: () => void): Promise<void> {
  change();
  const manifest = path.join(upstream, "package.json");
  writeFileSync(
    manifest,
    readFileSync(manifest, "utf8").replace(/"version": "[^"]+"/, `"version": "${version}"`),
  );
  await git(upstream, "add", "-A");
  await git(upstream, "commit", "-q", "-m", `release ${version}`);
  await git(upstream, "tag", `v${version}`);
}

function magpie(args: string[], timeoutMs = 240_000) {
  return execa(
    process.execPath,
    [path.join(install, "dist/bundle/main.js"), ...args, "--config", configFile],
    {
      cwd: runDir,
      env: environment,
      extendEnv: false,
      reject: false,
      timeout: timeoutMs,
    },
  );
}

function instance(): { pid: number; version: string } {
  return JSON.parse(readFileSync(path.join(dataDir, "magpie.pid"), "utf8")) as {
    pid: number;
    version: string;
  };
}

/** The owner writes on Telegram; resolves once the bot's answer arrived. */
async function ownerSays(text: string, answer: string): Promise<void> {
  llm.script(reply.text(answer));
  telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text });
  await waitFor(() => telegram.sentTexts().includes(answer), `the answer "${answer}"`, 30_000);
}

function schema(): { versions: number[]; tables: string[]; inbox: number } {
  const db = new Database(path.join(dataDir, "magpie.db"), { readonly: true });
  try {
    return {
      versions: db
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .pluck()
        .all() as number[],
      tables: db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[],
      inbox: db.prepare("SELECT count(*) FROM inbox").pluck().get() as number,
    };
  } finally {
    db.close();
  }
}

describe("magpie upgrade on a git checkout", () => {
  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), "magpie-upgrade-"));
    upstream = path.join(root, "upstream");
    install = path.join(root, "opt", "magpie");
    dataDir = path.join(root, "data");
    runDir = path.join(root, "run");
    mkdirSync(runDir, { recursive: true });
    mkdirSync(path.dirname(install), { recursive: true });
    await execa("git", ["clone", "-q", REPO, upstream]);
    await git(upstream, "config", "user.email", "test@example.com");
    await git(upstream, "config", "user.name", "Test");
    await git(upstream, "tag", "v0.1.0");
    await execa("git", ["clone", "-q", upstream, install]);
    // The install runs the build under test; node_modules is this checkout's (git must not see the link).
    cpSync(path.join(REPO, "dist", "bundle"), path.join(install, "dist", "bundle"), { recursive: true });
    rmSync(path.join(install, "dist", "bundle", ".chunk-loads"), { recursive: true, force: true });
    await execa("ln", ["-s", path.join(REPO, "node_modules"), path.join(install, "node_modules")]);
    writeFileSync(path.join(install, ".git", "info", "exclude"), "/node_modules\n");

    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    configFile = path.join(root, "magpie.yaml");
    writeFileSync(
      configFile,
      JSON.stringify({
        dataDir,
        workspace: path.join(root, "workspace"),
        http: { host: "127.0.0.1", port: 0 },
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        tools: { shell: { sandbox: "off" } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
      }),
    );
    environment = {
      PATH: process.env.PATH,
      HOME: root,
      LOG_LEVEL: "info",
      MAGPIE_UPGRADE_BUILD: `ln -s ${REPO}/node_modules node_modules && echo /node_modules >> .git/info/exclude && node scripts/bundle.mjs`,
    };
    // Magpie 0.1.0, started by hand in a terminal (not under systemd): upgrade stops it and starts a detached one.
    first = spawn(
      process.execPath,
      [path.join(install, "dist/bundle/main.js"), "start", "--config", configFile],
      {
        cwd: runDir,
        env: environment,
        stdio: "ignore",
      },
    );
    await waitFor(() => existsSync(path.join(dataDir, "magpie.pid")), "magpie.pid", 30_000);
    await ownerSays("hello 0.1.0", "Hi from 0.1.0");
  }, 120_000);

  afterAll(async () => {
    try {
      const pid = instance().pid;
      process.kill(pid, "SIGTERM");
      await waitFor(() => !existsSync(path.join(dataDir, "magpie.pid")), "Magpie to stop", 20_000).catch(() =>
        process.kill(pid, "SIGKILL"),
      );
    } catch {
      // Not running.
    }
    first?.kill("SIGKILL");
    await Promise.all([telegram?.close(), llm?.close()]);
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("upgrades to a good release: the install link switches, the new version answers on Telegram", async () => {
    await release("0.2.0", () => {});
    llm.script(reply.text("Upgrade check answered by 0.2.0"));
    const result = await magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toMatch(
      /Snapshot: database, 1 config\/\.env file\(s\) and revision in .*backups\/upgrade-/,
    );
    expect(result.stdout).toContain("✓ synthetic turn: test-model answered through the console path");
    expect(result.stdout).toContain("Upgrade check answered by 0.2.0");
    expect(result.stdout).toMatch(/✓ Upgraded Magpie 0\.1\.0 → 0\.2\.0/);
    expect(lstatSync(install).isSymbolicLink()).toBe(true);
    expect((await magpie(["--version"])).stdout.trim()).toBe("magpie 0.2.0");
    expect(instance().version).toBe("0.2.0");
    await ownerSays("hello 0.2.0", "Hi from 0.2.0");
    // Already there: nothing to do.
    const again = await magpie(["upgrade", "--to", "0.2.0"]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain("already at 0.2.0");
    llm.assertDone();
  }, 240_000);

  it("rolls back a release that fails to start: 0.2.0 runs and answers again, the owner is told", async () => {
    await release("0.3.0", () => {
      const main = path.join(upstream, "src/cli/main.ts");
      writeFileSync(
        main,
        readFileSync(main, "utf8").replace("\n", '\nthrow new Error("this release is broken");\n'),
      );
    });
    const before = instance().pid;
    llm.script(reply.text("Upgrade check answered by 0.2.0 after the rollback"));
    const result = await magpie(["upgrade"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toMatch(
      /✗ Magpie 0\.3\.0 \(v0\.3\.0\) failed: It exited \(code 1\) before it was up\./,
    );
    expect(result.stdout).toMatch(
      /✓ Rolled back: Magpie 0\.2\.0 runs again .*\/readyz 200; ✓ synthetic turn/,
    );
    expect(result.stdout).toContain(`The owner was told (telegram chat ${OWNER})`);
    expect(
      readFileSync(
        path.join(
          dataDir,
          "logs",
          `magpie-${(await git(upstream, "rev-parse", "HEAD")).stdout.slice(0, 12)}.log`,
        ),
        "utf8",
      ),
    ).toContain("this release is broken");
    expect((await magpie(["--version"])).stdout.trim()).toBe("magpie 0.2.0");
    expect(instance()).toMatchObject({ version: "0.2.0" });
    expect(instance().pid).not.toBe(before);
    await waitFor(
      () =>
        telegram
          .sentTexts()
          .some((text) => text.startsWith("Magpie upgrade rolled back: Upgrading to 0.3.0")),
      "the owner's notice",
      30_000,
    );
    await ownerSays("still there?", "Yes, 0.2.0 again");
    llm.assertDone();
  }, 240_000);

  it("rolls back a release whose migration fails: the database is the pre-upgrade one, data intact, answering", async () => {
    const before = schema();
    await git(upstream, "checkout", "-q", "v0.2.0", "--", "src/cli/main.ts");
    await release("0.4.0", () => {
      const migrations = path.join(upstream, "src/store/migrations");
      writeFileSync(
        path.join(migrations, "990-probe.ts"),
        'export const probeMigration = { version: 990, name: "probe", up: "CREATE TABLE upgrade_probe (x)" };\n',
      );
      writeFileSync(
        path.join(migrations, "991-broken.ts"),
        'export const brokenMigration = { version: 991, name: "broken", up: () => { throw new Error("migration 991 failed"); } };\n',
      );
      const index = path.join(migrations, "index.ts");
      writeFileSync(
        index,
        `import { probeMigration } from "./990-probe.js";\nimport { brokenMigration } from "./991-broken.js";\n${readFileSync(
          index,
          "utf8",
        ).replace(
          "export const migrations: Migration[] = [",
          "export const migrations: Migration[] = [\n  probeMigration,\n  brokenMigration,",
        )}`,
      );
    });
    llm.script(reply.text("Upgrade check answered by 0.2.0 again"));
    const result = await magpie(["upgrade", "--to", "v0.4.0"]);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(result.stdout).toContain("✗ Magpie 0.4.0 (v0.4.0) failed");
    expect(result.stdout).toMatch(
      /✓ Database put back from .*upgrade-.*magpie\.db \(the failed one is kept at .*magpie-failed-upgrade-/,
    );
    expect(result.stdout).toContain("✓ Rolled back: Magpie 0.2.0 runs again");
    const after = schema();
    expect(after.versions).toEqual(before.versions);
    expect(after.tables).not.toContain("upgrade_probe");
    // The notice the rollback queued is the one new row's worth of change; the messages are all there.
    expect(after.inbox).toBe(before.inbox);
    expect((await magpie(["--version"])).stdout.trim()).toBe("magpie 0.2.0");
    await ownerSays("and now?", "Still 0.2.0");
    llm.assertDone();
  }, 240_000);
});
