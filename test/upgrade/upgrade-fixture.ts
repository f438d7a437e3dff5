import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";

const REPO = path.resolve(".");

/**
 * A git-checkout install to upgrade, made from this repository: `upstream` (a clone of HEAD, tagged v0.1.0, where
 * a test commits and tags releases) and `install` (a clone of upstream at v0.1.0 running the build under test,
 * dist/bundle, with this checkout's node_modules linked), a Telegram fake and an LLM fake, and Magpie 0.1.0
 * started by hand (not under systemd), to which the owner has written once.
 *
 * Releases are built for real from their commit by scripts/bundle.mjs (`MAGPIE_UPGRADE_BUILD`, instead of tsc +
 * bundle); their package-lock.json is this checkout's, so the upgrade reuses the install's node_modules (a link
 * to this checkout's) instead of running `npm ci`.
 */
export class UpgradeFixture {
  readonly owner = 7001;
  readonly root = mkdtempSync(path.join(tmpdir(), "magpie-upgrade-"));
  readonly upstream = path.join(this.root, "upstream");
  readonly install = path.join(this.root, "opt", "magpie");
  readonly dataDir = path.join(this.root, "data");
  readonly configFile = path.join(this.root, "magpie.yaml");
  readonly runDir = path.join(this.root, "run");
  readonly environment: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: this.root,
    LOG_LEVEL: "info",
    // The build without tsc (esbuild only); node_modules comes from the install's (a link to this checkout's), reused
    // by the upgrade as the lock file is the same.
    MAGPIE_UPGRADE_BUILD: "node scripts/bundle.mjs",
  };
  telegram!: FakeTelegram;
  llm!: OpenAiFake;
  private first: ChildProcess | null = null;

  static async create(): Promise<UpgradeFixture> {
    const fixture = new UpgradeFixture();
    try {
      await fixture.setUp();
    } catch (error) {
      await fixture.dispose();
      throw error;
    }
    return fixture;
  }

  private async setUp(): Promise<void> {
    mkdirSync(this.runDir, { recursive: true });
    mkdirSync(path.dirname(this.install), { recursive: true });
    await execa("git", ["clone", "-q", REPO, this.upstream]);
    await this.git("config", "user.email", "test@example.com");
    await this.git("config", "user.name", "Test");
    await this.git("tag", "v0.1.0");
    await execa("git", ["clone", "-q", this.upstream, this.install]);
    cpSync(path.join(REPO, "dist", "bundle"), path.join(this.install, "dist", "bundle"), { recursive: true });
    rmSync(path.join(this.install, "dist", "bundle", ".chunk-loads"), { recursive: true, force: true });
    symlinkSync(path.join(REPO, "node_modules"), path.join(this.install, "node_modules"));
    // The link is not a local change of the checkout.
    writeFileSync(path.join(this.install, ".git", "info", "exclude"), "/node_modules\n");

    this.telegram = await new FakeTelegram().start();
    this.llm = await startOpenAiFake();
    writeFileSync(
      this.configFile,
      JSON.stringify({
        dataDir: this.dataDir,
        workspace: path.join(this.root, "workspace"),
        http: { host: "127.0.0.1", port: 0 },
        llm: { baseUrl: this.llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        tools: { shell: { sandbox: "off" } },
        channels: {
          telegram: {
            token: this.telegram.validToken,
            apiRoot: this.telegram.apiRoot,
            pacing: false,
            allowFrom: [this.owner],
          },
        },
      }),
    );
    this.first = spawn(
      process.execPath,
      [path.join(this.install, "dist/bundle/main.js"), "start", "--config", this.configFile],
      { cwd: this.runDir, env: this.environment, stdio: "ignore" },
    );
    await waitFor(() => existsSync(path.join(this.dataDir, "magpie.pid")), "magpie.pid", 30_000);
    await this.ownerSays("hello 0.1.0", "Hi from 0.1.0");
  }

  git(...args: string[]) {
    return execa("git", args, { cwd: this.upstream });
  }

  /** Commits `change` with package.json's version set to `version`, and tags it v<version>. */
  async release(version: string, change: () => void = () => {}): Promise<string> {
    change();
    const manifest = path.join(this.upstream, "package.json");
    writeFileSync(
      manifest,
      readFileSync(manifest, "utf8").replace(/"version": "[^"]+"/, `"version": "${version}"`),
    );
    await this.git("add", "-A");
    await this.git("commit", "-q", "-m", `release ${version}`);
    await this.git("tag", `v${version}`);
    return (await this.git("rev-parse", "HEAD")).stdout.trim();
  }

  /**
   * Commits a release whose migrations are v0.1.0's plus `extra` (each a file in src/store/migrations exporting
   * `exportName`), appended to the list in order.
   */
  async releaseWithMigrations(
    version: string,
    extra: Array<{ file: string; exportName: string; source: string }>,
  ): Promise<string> {
    const migrations = path.join(this.upstream, "src/store/migrations");
    // Whatever an earlier release added is dropped: the directory is v0.1.0's again.
    rmSync(migrations, { recursive: true, force: true });
    await this.git("checkout", "-q", "v0.1.0", "--", "src/store/migrations");
    return this.release(version, () => {
      for (const migration of extra) writeFileSync(path.join(migrations, migration.file), migration.source);
      const index = path.join(migrations, "index.ts");
      const imports = extra
        .map((m) => `import { ${m.exportName} } from "./${m.file.replace(/\.ts$/, ".js")}";\n`)
        .join("");
      writeFileSync(
        index,
        `${imports}${readFileSync(index, "utf8").replace(
          /export const migrations: Migration\[\] = \[([^\]]*)\]/,
          (_all, list: string) =>
            `export const migrations: Migration[] = [${list}${extra.map((m) => `  ${m.exportName},\n`).join("")}]`,
        )}`,
      );
    });
  }

  /** `magpie <args> --config <config>` from the install, as its owner would run it (`env` added to its environment). */
  magpie(args: string[], timeoutMs = 240_000, env: NodeJS.ProcessEnv = {}) {
    return execa(
      process.execPath,
      [path.join(this.install, "dist/bundle/main.js"), ...args, "--config", this.configFile],
      {
        cwd: this.runDir,
        env: { ...this.environment, ...env },
        extendEnv: false,
        reject: false,
        timeout: timeoutMs,
      },
    );
  }

  async version(): Promise<string> {
    return (await this.magpie(["--version"])).stdout.trim();
  }

  /** What `<dataDir>/magpie.pid` says. */
  instance(): { pid: number; version: string } {
    return JSON.parse(readFileSync(path.join(this.dataDir, "magpie.pid"), "utf8")) as {
      pid: number;
      version: string;
    };
  }

  /** The owner writes on Telegram; resolves once the bot's answer (scripted here) arrived. */
  async ownerSays(text: string, answer: string): Promise<void> {
    this.llm.script(reply.text(answer));
    this.telegram.pushMessage({ chat: { id: this.owner, type: "private" }, from: { id: this.owner }, text });
    await waitFor(() => this.telegram.sentTexts().includes(answer), `the answer "${answer}"`, 30_000);
  }

  /** The database's migrations, tables and inbox size. */
  schema(): { versions: number[]; tables: string[]; inbox: number } {
    const db = new Database(path.join(this.dataDir, "magpie.db"), { readonly: true });
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

  async dispose(): Promise<void> {
    try {
      const pid = this.instance().pid;
      process.kill(pid, "SIGTERM");
      await waitFor(() => !existsSync(path.join(this.dataDir, "magpie.pid")), "Magpie to stop", 20_000).catch(
        () => process.kill(pid, "SIGKILL"),
      );
    } catch {
      // Not running.
    }
    this.first?.kill("SIGKILL");
    await Promise.all([this.telegram?.close(), this.llm?.close()]);
    rmSync(this.root, { recursive: true, force: true });
  }
}
