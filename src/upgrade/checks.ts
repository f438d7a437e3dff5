import { execa } from "execa";
import type { InstanceInfo } from "./instance.js";
import { sleep, userOf } from "./process-info.js";
import { UpgradeError } from "./upgrade-error.js";

/** Polls `GET /readyz` until it answers 200 (database open, every channel connected). */
export async function waitReady(
  instance: InstanceInfo,
  timeoutMs: number,
  exited: Promise<number | null> | null,
): Promise<void> {
  if (!instance.http) {
    throw new UpgradeError("upgrade.no_http", "It doesn't listen on HTTP, so /readyz can't be checked.");
  }
  const host =
    instance.http.host === "0.0.0.0" ? "127.0.0.1" : instance.http.host === "::" ? "::1" : instance.http.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${instance.http.port}/readyz`;
  let exitCode: number | null | undefined;
  void exited?.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      const body = (await response.text()).slice(0, 500);
      if (response.status === 200) return;
      last = `${response.status} ${body}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (exitCode !== undefined)
      throw new UpgradeError(
        "upgrade.start_failed",
        `It exited (code ${exitCode}) before /readyz answered 200.`,
      );
    if (Date.now() > deadline) {
      throw new UpgradeError(
        "upgrade.not_ready",
        `${url} did not answer 200 within ${Math.round(timeoutMs / 1000)} s (last: ${last}).`,
      );
    }
    await sleep(250);
  }
}

export type TurnCheck = { ok: true; summary: string } | { ok: false; unsupported: true; summary: string };

/**
 * One synthetic turn through the console path, run by the release itself (`magpie selftest`, see
 * src/cli/commands/selftest.ts) with the instance's config, environment and directory. A release without the
 * command (older than it) reports `unsupported`.
 */
export async function syntheticTurn(options: {
  instance: InstanceInfo;
  mainScript: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
}): Promise<TurnCheck> {
  // Under sudo, the check runs as the user Magpie runs as (its scratch files are in dataDir).
  const user = process.getuid?.() === 0 ? userOf(options.instance.pid) : null;
  const { instance } = options;
  const result = await execa(
    instance.execPath,
    [options.mainScript, "selftest", ...(instance.configPath ? ["--config", instance.configPath] : [])],
    {
      cwd: instance.cwd,
      ...(user ?? {}),
      env: options.env,
      extendEnv: false,
      reject: false,
      timeout: options.timeoutMs,
      stdin: "ignore",
    },
  );
  if (result.exitCode === 0) return { ok: true, summary: result.stdout.trim().split("\n").pop() ?? "" };
  if (result.exitCode === 2 && result.stderr.includes('Unknown command "selftest"')) {
    return { ok: false, unsupported: true, summary: "this release has no magpie selftest" };
  }
  const detail = (result.timedOut ? "it timed out" : `${result.stderr}\n${result.stdout}`)
    .trim()
    .slice(-1500);
  throw new UpgradeError(
    "upgrade.turn_failed",
    `The synthetic turn failed (exit ${result.exitCode}): ${detail}`,
  );
}
