import { UpgradeError } from "../../upgrade/upgrade-error.js";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";

const USAGE = `Usage: magpie upgrade [--to <version or git ref>]
  Upgrades a git-checkout install: snapshots the database, config and .env, installs the release beside this
  one (git clone; the installed node_modules when package-lock.json is unchanged, else npm ci; build), stops
  Magpie, switches the install link, starts the new release and waits for /readyz and one synthetic turn through
  the console path. On any failure it moves the failed release's database files aside (unopened), puts the
  previous release and database back, starts them and tells the owner. Run it as the user who owns the install
  (e.g. with sudo).
  --to <ref>   a version (0.2.0 or v0.2.0), tag, branch of origin or commit (default: the newest version tag,
               else origin's default branch)
  MAGPIE_UPGRADE_TIMEOUT=<seconds> in the environment: how long a release gets to come up, be ready and answer
               (default 120; raise it for long migrations on a slow board).`;

/** `MAGPIE_UPGRADE_TIMEOUT` in ms; undefined when unset; null when it isn't a whole number of seconds (1–86400). */
function timeoutFromEnvironment(value: string | undefined): number | undefined | null {
  if (value === undefined || value === "") return undefined;
  const seconds = Number(value);
  return /^\d+$/.test(value) && seconds >= 1 && seconds <= 86_400 ? seconds * 1000 : null;
}

/** `magpie upgrade [--to <ref>]`: see src/upgrade/run-upgrade.ts. */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, { to: { type: "string" } });
  if (typeof parsed === "number") return parsed;
  const { values } = parsed;
  if (values.to !== undefined && (values.to === "" || values.to.startsWith("-"))) {
    env.stderr.write(
      `--to "${values.to}": name a version, tag, branch or commit (it can't start with "-").\n${USAGE}\n`,
    );
    return 2;
  }
  const timeoutMs = timeoutFromEnvironment(process.env.MAGPIE_UPGRADE_TIMEOUT);
  if (timeoutMs === null) {
    env.stderr.write(
      `MAGPIE_UPGRADE_TIMEOUT="${String(process.env.MAGPIE_UPGRADE_TIMEOUT).slice(0, 40)}": a whole number of seconds, 1 to 86400.\n${USAGE}\n`,
    );
    return 2;
  }
  const config = env.loadConfig();
  const { runUpgrade } = await import("../../upgrade/run-upgrade.js");
  try {
    const outcome = await runUpgrade({
      config,
      to: values.to,
      timeoutMs,
      say: (line) => env.stdout.write(`${line}\n`),
    });
    return outcome.status === "upgraded" || outcome.status === "current" ? 0 : 1;
  } catch (error) {
    if (error instanceof UpgradeError) {
      env.stderr.write(`✗ ${error.message}\n  Nothing was changed.\n`);
      return 1;
    }
    throw error;
  }
};
