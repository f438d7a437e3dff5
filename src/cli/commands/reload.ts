import { describeReloadOutcome, type ReloadOutcome, readReloadOutcome } from "../../app/reload-result.js";
import { errorMessage } from "../../lib/errors.js";
import { checkTriggerPredicates } from "../../triggers/check-predicates.js";
import { runningInstance } from "../../upgrade/instance.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";

const USAGE = `Usage: magpie reload [--timeout <seconds>]
  Checks the config file, then has the running Magpie re-read it (SIGHUP) and prints what it applied, what
  needs a restart and what failed. An invalid file is reported here and the running Magpie is not touched.
  --timeout <seconds>   how long to wait for the running Magpie's answer (default 10)`;

const POLL_MS = 100;

/** `magpie reload`: validates the config, signals the running Magpie and reports its reload. */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, { timeout: { type: "string" } });
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  const timeoutSecs = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(timeoutSecs) || timeoutSecs <= 0) {
    env.stderr.write(`--timeout: give a number of seconds above 0, not "${values.timeout}".\n${USAGE}\n`);
    return 2;
  }
  // An invalid file stops here (ConfigError: one line per key path, exit 1): the running Magpie is not signalled.
  const config = env.loadConfig();
  await checkTriggerPredicates(config.triggers);
  const instance = runningInstance(config.dataDir);
  if (!instance) {
    env.stderr.write(
      `No Magpie is running on ${config.dataDir} (no live process in ${config.dataDir}/magpie.pid) — start it with \`magpie start\`; it reads the config then.\n`,
    );
    return 1;
  }
  const sentAt = Date.now();
  try {
    process.kill(instance.pid, "SIGHUP");
  } catch (error) {
    env.stderr.write(
      `Could not signal Magpie (pid ${instance.pid}): ${errorMessage(error)} — run magpie reload as the user Magpie runs as.\n`,
    );
    return 1;
  }
  const outcome = await waitForOutcome(config.dataDir, sentAt, timeoutSecs * 1000);
  if (!outcome) {
    env.stderr.write(
      `Sent SIGHUP to Magpie (pid ${instance.pid}) but it reported no reload within ${timeoutSecs} s — see its log (config-reloaded).\n`,
    );
    return 1;
  }
  const lines = describeReloadOutcome(outcome);
  if (outcome.problems.length > 0) {
    env.stderr.write(`${lines.join("\n")}\n`);
    return 1;
  }
  const head = outcome.ok
    ? `✓ Magpie (pid ${instance.pid}) reloaded ${config.sourcePath ?? "its config"}:`
    : `✗ Magpie (pid ${instance.pid}) reloaded ${config.sourcePath ?? "its config"}, but a part failed:`;
  (outcome.ok ? env.stdout : env.stderr).write(`${[head, ...lines].join("\n")}\n`);
  return outcome.ok ? 0 : 1;
};

/** The first outcome of a reload asked for at or after `since`, or null after `timeoutMs`. */
async function waitForOutcome(
  dataDir: string,
  since: number,
  timeoutMs: number,
): Promise<ReloadOutcome | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const outcome = readReloadOutcome(dataDir);
    if (outcome && outcome.source === "signal" && outcome.requestedAt >= since) return outcome;
    if (Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
