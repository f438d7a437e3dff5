import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { readManifest } from "../lib/manifest.js";
import { canReuseDependencies, reuseDependencies } from "./dependencies.js";
import { git, gitOrNull } from "./git.js";
import { type Install, MAIN_SCRIPT, releaseName } from "./install.js";
import { UpgradeError } from "./upgrade-error.js";

/** A release installed beside the running one, built and ready to start. */
export interface Release {
  dir: string;
  revision: string;
  version: string;
  /** What `--to` named (or the default it chose). */
  ref: string;
  /** How it got its node_modules: reused from the running release (the same lock file), or `npm ci`. */
  dependencies?: "reused" | "installed";
}

/**
 * Installs and builds a release: its dependencies — the running release's node_modules when package-lock.json pins
 * the same tree (no network), else `npm ci` (whose `prepare` script builds dist/) — then `npm run build` if that
 * left no bundle. `MAGPIE_UPGRADE_BUILD` replaces the build (`npm run build`) with one shell command run in the
 * release's directory — for tests (which bundle without tsc) and unusual setups.
 */
const BUILD_ENV = "MAGPIE_UPGRADE_BUILD";

/** Fetches from origin and finds the commit `ref` names (default: the newest version tag, else origin's default branch). */
export async function resolveTarget(
  install: Install,
  ref: string | undefined,
): Promise<{ ref: string; revision: string }> {
  if (ref?.startsWith("-")) {
    throw new UpgradeError("upgrade.bad_ref", `--to ${ref}: a version or git ref can't start with "-".`);
  }
  const origin = await gitOrNull(install.checkout, ["remote", "get-url", "origin"]);
  if (origin) await git(install.checkout, ["fetch", "--quiet", "--tags", "--force", "origin"]);
  const commitOf = (name: string) =>
    gitOrNull(install.checkout, ["rev-parse", "--verify", "--quiet", `${name}^{commit}`]);
  if (ref === undefined) {
    const tags = (await git(install.checkout, ["tag", "--list", "--sort=-v:refname"]))
      .split("\n")
      .filter(Boolean);
    const newest = tags.find((tag) => /^v?\d+\.\d+\.\d+$/.test(tag)) ?? tags[0];
    if (newest) return { ref: newest, revision: (await commitOf(`refs/tags/${newest}`))! };
    const head = await commitOf("refs/remotes/origin/HEAD");
    if (head) return { ref: "origin/HEAD", revision: head };
    throw new UpgradeError(
      "upgrade.no_target",
      `${install.checkout} has no version tags and no origin/HEAD to upgrade to. Name one: magpie upgrade --to <tag, branch or commit>.`,
    );
  }
  for (const name of [`refs/tags/${ref}`, `refs/tags/v${ref}`, `refs/remotes/origin/${ref}`, ref]) {
    const revision = await commitOf(name);
    if (revision) return { ref, revision };
  }
  throw new UpgradeError(
    "upgrade.unknown_ref",
    `--to ${ref}: no tag, branch of origin or commit by that name in ${install.checkout}${origin ? ` (after fetching ${origin})` : ""}. List them with git tag / git branch -r.`,
  );
}

/**
 * Clones `revision` into `<releasesDir>/<revision>` beside the running release (a local clone: hard-linked
 * objects, no network), copies the config and `.env` files that live inside the old checkout, and builds it.
 * The running Magpie is untouched; a failed build leaves nothing behind but its log.
 */
export async function installRelease(options: {
  install: Install;
  target: { ref: string; revision: string };
  /** Untracked files inside the checkout the running Magpie reads (its config file, `.env`). */
  localFiles: string[];
  buildLog: string;
}): Promise<Release> {
  const { install, target } = options;
  const dir = path.join(install.releasesDir, releaseName(target.revision));
  const partial = `${dir}.partial`;
  mkdirSync(install.releasesDir, { recursive: true });
  rmSync(partial, { recursive: true, force: true });
  let dependencies: Release["dependencies"];
  try {
    await git(install.releasesDir, ["clone", "--quiet", "--no-checkout", install.checkout, partial]);
    await git(partial, ["fetch", "--quiet", install.checkout, target.revision]);
    await git(partial, ["checkout", "--quiet", "--detach", target.revision]);
    const origin = await gitOrNull(install.checkout, ["remote", "get-url", "origin"]);
    if (origin) await git(partial, ["remote", "set-url", "origin", origin]);
    for (const file of options.localFiles) {
      const relative = path.relative(install.checkout, file);
      mkdirSync(path.dirname(path.join(partial, relative)), { recursive: true });
      copyFileSync(file, path.join(partial, relative));
    }
    dependencies = await build(partial, install.checkout, options.buildLog);
    if (!existsSync(path.join(partial, MAIN_SCRIPT))) {
      throw new UpgradeError(
        "upgrade.build_failed",
        `The build of ${target.ref} left no ${MAIN_SCRIPT}; see ${options.buildLog}.`,
      );
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw error;
  }
  const manifest = readManifest(path.join(dir, "package.json"));
  return {
    dir,
    revision: target.revision,
    version: manifest?.version ?? "unknown",
    ref: target.ref,
    dependencies,
  };
}

async function build(
  dir: string,
  running: string,
  logFile: string,
): Promise<NonNullable<Release["dependencies"]>> {
  mkdirSync(path.dirname(logFile), { recursive: true });
  const log = createWriteStream(logFile, { flags: "a" });
  const custom = process.env[BUILD_ENV];
  const reuse = canReuseDependencies(running, dir);
  const steps: Array<{ command: string; args: string[]; shell?: boolean; unlessBuilt?: boolean }> = [
    // Dev dependencies too (tsc and esbuild build dist/), whatever NODE_ENV says.
    ...(reuse ? [] : [{ command: "npm", args: ["ci", "--include=dev", "--no-audit", "--no-fund"] }]),
    custom
      ? { command: custom, args: [], shell: true }
      : { command: "npm", args: ["run", "build"], unlessBuilt: true },
  ];
  try {
    if (reuse) {
      const how = await reuseDependencies(running, dir);
      log.write(
        `package-lock.json pins the same dependencies as ${running}: its node_modules reused (${how}), no npm ci.\n`,
      );
    }
    for (const step of steps) {
      if (step.unlessBuilt && existsSync(path.join(dir, MAIN_SCRIPT))) continue;
      const shown = [step.command, ...step.args].join(" ");
      log.write(`$ ${shown}\n`);
      const child = execa(step.command, step.args, {
        cwd: dir,
        shell: step.shell ?? false,
        reject: false,
        all: true,
      });
      child.all?.pipe(log, { end: false });
      const result = await child;
      if (result.exitCode !== 0) {
        const lines = (result.all ?? "").trim().split("\n");
        // The first error line says what broke; the last lines say how the command ended.
        const firstError = lines.findIndex((line) => /error/i.test(line));
        const excerpt = [
          ...(firstError >= 0 ? lines.slice(firstError, firstError + 6) : []),
          "…",
          ...lines.slice(-6),
        ];
        const tail = excerpt.join("\n    ");
        throw new UpgradeError(
          "upgrade.build_failed",
          `${shown} failed in ${dir} (exit ${result.exitCode}):\n    ${tail}\n  Full output: ${logFile}`,
        );
      }
    }
  } finally {
    await new Promise((resolve) => log.end(resolve));
  }
  return reuse ? "reused" : "installed";
}
