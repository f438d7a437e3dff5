import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { syntheticTurn, waitReady } from "../../src/upgrade/checks.js";
import type { InstanceInfo } from "../../src/upgrade/instance.js";
import type { UpgradeError } from "../../src/upgrade/upgrade-error.js";
import { closeServer, listen } from "../fakes/http-util.js";

/** The checks a started release must pass: /readyz 200 in time, and `magpie selftest`'s synthetic turn. */

let dir: string;
let server: Server | null = null;
let statuses: number[] = [];

const instance = (port: number): InstanceInfo => ({
  pid: process.pid,
  startedAt: "now",
  mode: "start",
  version: "0.2.0",
  http: { host: "127.0.0.1", port },
  configPath: path.join(dir, "magpie.yaml"),
  execPath: process.execPath,
  argv: [],
  cwd: dir,
});

async function readyz(): Promise<number> {
  server = createServer((_request, response) => {
    response.writeHead(statuses.length > 1 ? statuses.shift()! : statuses[0]!, {
      "content-type": "application/json",
    });
    response.end('{"channels":{"telegram":"connecting"}}');
  });
  return listen(server);
}

function release(script: string): string {
  const file = path.join(dir, "main.js");
  writeFileSync(file, script);
  return file;
}

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "magpie-checks-"));
});
afterEach(async () => {
  if (server) await closeServer(server);
  server = null;
  rmSync(dir, { recursive: true, force: true });
});

describe("waitReady", () => {
  it("waits through 503s for the 200", async () => {
    statuses = [503, 503, 200];
    await waitReady(instance(await readyz()), 10_000, null);
    expect(statuses).toEqual([200]);
  });

  it("a /readyz that stays 503 times out naming the last answer; a process that exits fails at once", async () => {
    statuses = [503];
    const port = await readyz();
    const timedOut = await waitReady(instance(port), 1_000, null).catch((error: unknown) => error);
    expect((timedOut as UpgradeError).code).toBe("upgrade.not_ready");
    expect((timedOut as UpgradeError).message).toMatch(
      /readyz did not answer 200 within 1 s \(last: 503 \{"channels":\{"telegram":"connecting"\}\}\)/,
    );
    const exited = await waitReady(instance(port), 60_000, Promise.resolve(1)).catch(
      (error: unknown) => error,
    );
    expect((exited as UpgradeError).message).toBe("It exited (code 1) before /readyz answered 200.");
  });
});

describe("syntheticTurn", () => {
  const run = (script: string) =>
    syntheticTurn({
      instance: instance(1),
      mainScript: release(script),
      env: { PATH: process.env.PATH },
      timeoutMs: 10_000,
    });

  it("passes the release's selftest with the instance's config; its last line is the summary", async () => {
    const result = await run(
      'console.log("loading"); console.log("✓ synthetic turn: " + process.argv.slice(2).join(" "));',
    );
    expect(result).toEqual({
      ok: true,
      summary: `✓ synthetic turn: selftest --config ${path.join(dir, "magpie.yaml")}`,
    });
  });

  it("a failed turn is an UpgradeError with its output; a release without selftest is 'unsupported'", async () => {
    const failed = await run(
      'console.error("✗ selftest: the turn ended error (llm.unauthorized)"); process.exit(1);',
    ).catch((error: unknown) => error);
    expect((failed as UpgradeError).code).toBe("upgrade.turn_failed");
    expect((failed as UpgradeError).message).toContain(
      "(exit 1): ✗ selftest: the turn ended error (llm.unauthorized)",
    );
    const old = await run("console.error('Unknown command \"selftest\".'); process.exit(2);");
    expect(old).toEqual({ ok: false, unsupported: true, summary: "this release has no magpie selftest" });
  });
});
