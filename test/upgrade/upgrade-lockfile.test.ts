import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply } from "../fakes/openai.js";
import { UpgradeFixture } from "./upgrade-fixture.js";

/**
 * `magpie upgrade` with npm's registry unreachable: a release whose package-lock.json pins the same dependencies
 * (only its own version bumped) reuses the install's node_modules and builds with the real `npm run build`, no
 * `npm ci`; a release with another lock file runs `npm ci` (which fails offline, so nothing is stopped). Every npm
 * the upgrade runs goes through a wrapper on PATH that writes its arguments down (fixture: upgrade-fixture.ts).
 */
describe("magpie upgrade: an unchanged lock file needs no network", () => {
  let fixture: UpgradeFixture;
  let offline: NodeJS.ProcessEnv;
  let calls: string;

  beforeAll(async () => {
    fixture = await UpgradeFixture.create();
    const realNpm = (await execa("which", ["npm"])).stdout.trim();
    const bin = path.join(fixture.root, "npm-wrapper");
    calls = path.join(fixture.root, "npm-calls.log");
    mkdirSync(bin);
    writeFileSync(
      path.join(bin, "npm"),
      `#!/bin/sh\necho "$*" >> ${JSON.stringify(calls)}\nexec ${JSON.stringify(realNpm)} "$@"\n`,
    );
    chmodSync(path.join(bin, "npm"), 0o755);
    offline = {
      PATH: `${bin}:${process.env.PATH}`,
      npm_config_registry: "http://127.0.0.1:1/",
      npm_config_fetch_retries: "0",
      npm_config_update_notifier: "false",
    };
  }, 120_000);
  afterAll(async () => fixture?.dispose(), 60_000);

  const npmCalls = () => (existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n") : []);

  /** package-lock.json with the root package's version set, as `npm version` leaves it. */
  const bumpLock = (version: string, change: (lock: Record<string, unknown>) => void = () => {}) => {
    const file = path.join(fixture.upstream, "package-lock.json");
    const lock = JSON.parse(readFileSync(file, "utf8")) as {
      version: string;
      packages: Record<string, Record<string, unknown>>;
    };
    lock.version = version;
    lock.packages[""]!.version = version;
    change(lock);
    writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  };

  it("a changed lock file runs npm ci — offline it fails, and 0.1.0 was never stopped", async () => {
    const pid = fixture.instance().pid;
    await fixture.release("0.1.1", () =>
      bumpLock("0.1.1", (lock) => {
        (lock.packages as Record<string, unknown>)["node_modules/magpie-lock-probe"] = {
          version: "1.0.0",
          resolved: "http://127.0.0.1:1/magpie-lock-probe/-/magpie-lock-probe-1.0.0.tgz",
          integrity:
            "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==",
        };
      }),
    );
    const result = await fixture.magpie(["upgrade", "--to", "v0.1.1"], 240_000, offline);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(1);
    expect(npmCalls()).toEqual(["ci --include=dev --no-audit --no-fund"]);
    expect(result.stdout).toContain(
      "✗ Installing v0.1.1 failed; Magpie 0.1.0 was not stopped and keeps running.",
    );
    expect(result.stdout).toContain("npm ci --include=dev --no-audit --no-fund failed");
    expect(fixture.instance().pid).toBe(pid);
    await fixture.ownerSays("still 0.1.0 after the failed install?", "Yes, still 0.1.0");
  }, 240_000);

  it("the same dependencies (only the version bumped): node_modules reused, the real npm run build, no npm ci, upgraded offline", async () => {
    await fixture.git("checkout", "-q", "v0.1.0", "--", "package-lock.json");
    const revision = await fixture.release("0.2.0", () => bumpLock("0.2.0"));
    writeFileSync(calls, "");
    fixture.llm.script(reply.text("Upgrade check answered by 0.2.0, built offline"));
    // The real build (tsc + bundle), not the fixture's bundle-only shortcut.
    const result = await fixture.magpie(["upgrade", "--to", "v0.2.0"], 240_000, {
      ...offline,
      MAGPIE_UPGRADE_BUILD: "",
    });
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain(
      `✓ Installed Magpie 0.2.0 (${revision.slice(0, 12)}); package-lock.json unchanged, so node_modules was reused (no npm ci).`,
    );
    expect(npmCalls()).toEqual(["run build"]);
    const buildLog = readFileSync(
      path.join(fixture.dataDir, "logs", `upgrade-${revision.slice(0, 12)}-build.log`),
      "utf8",
    );
    expect(buildLog).toMatch(
      /package-lock\.json pins the same dependencies as .*: its node_modules reused \(linked\), no npm ci\./,
    );
    expect(buildLog).not.toContain("$ npm ci");
    expect(result.stdout).toMatch(/✓ Upgraded Magpie 0\.1\.0 → 0\.2\.0/);
    expect(await fixture.version()).toBe("magpie 0.2.0");
    await fixture.ownerSays("hello 0.2.0", "Hi from 0.2.0, installed offline");
    fixture.llm.assertDone();
  }, 300_000);
});
