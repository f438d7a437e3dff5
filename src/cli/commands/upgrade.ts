import { parseArgs } from "node:util";
import { UpgradeError } from "../../upgrade/upgrade-error.js";
import type { CliCommand } from "../cli-env.js";

const USAGE = `Usage: magpie upgrade [--to <version or git ref>]
  Upgrades a git-checkout install: snapshots the database, config and .env, installs the release beside this
  one (git clone, npm ci, build), stops Magpie, switches the install link, starts the new release and waits for
  /readyz and one synthetic turn through the console path. On any failure it puts the previous release and
  database back, starts them and tells the owner. Run it as the user who owns the install (e.g. with sudo).
  --to <ref>   a version (0.2.0 or v0.2.0), tag, branch of origin or commit (default: the newest version tag,
               else origin's default branch)`;

/** `magpie upgrade [--to <ref>]`: see src/upgrade/run-upgrade.ts. */
export const run: CliCommand = async (argv, env) => {
  let values: { to?: string; help?: boolean };
  try {
    values = parseArgs({
      args: argv,
      options: { to: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: false,
      strict: true,
    }).values;
  } catch (error) {
    env.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    env.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.to !== undefined && (values.to === "" || values.to.startsWith("-"))) {
    env.stderr.write(
      `--to "${values.to}": name a version, tag, branch or commit (it can't start with "-").\n${USAGE}\n`,
    );
    return 2;
  }
  const config = env.loadConfig();
  const { runUpgrade } = await import("../../upgrade/run-upgrade.js");
  try {
    const outcome = await runUpgrade({
      config,
      to: values.to,
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
