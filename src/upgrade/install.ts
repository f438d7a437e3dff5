import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import path from "node:path";
import { readManifest } from "../lib/manifest.js";
import { git } from "./git.js";
import { UpgradeError } from "./upgrade-error.js";

/** The bundle's entry below an install: what `npm start` and the systemd unit run. */
export const MAIN_SCRIPT = path.join("dist", "bundle", "main.js");

/**
 * A git-checkout install. `link` is the path Magpie is run from (`/opt/magpie`: the systemd unit's ExecStart
 * names `<link>/dist/bundle/main.js`). After the first upgrade `link` is a symbolic link to one release in
 * `releasesDir` (`/opt/magpie-releases/<revision>`), and switching releases is one atomic rename of that link.
 */
export interface Install {
  link: string;
  /** The checkout `link` is now (its real path). */
  checkout: string;
  releasesDir: string;
  revision: string;
  version: string;
}

/** The install that `mainScript` (`<install>/dist/bundle/main.js`) belongs to; refuses anything but a clean git checkout. */
export async function findInstall(mainScript: string): Promise<Install> {
  const script = path.resolve(mainScript);
  if (!script.endsWith(`${path.sep}${MAIN_SCRIPT}`)) {
    throw new UpgradeError(
      "upgrade.unknown_install",
      `Magpie runs from ${script}, not from a checkout's ${MAIN_SCRIPT}; magpie upgrade only upgrades a git checkout. Upgrade by hand (docs/operations.md → Upgrades).`,
    );
  }
  const link = path.resolve(script, "..", "..", "..");
  const checkout = realpathSync(link);
  const topLevel = await git(checkout, ["rev-parse", "--show-toplevel"]).catch(() => null);
  if (!topLevel || realpathSync(topLevel) !== checkout) {
    throw new UpgradeError(
      "upgrade.not_git",
      `${checkout} is not a git checkout, so magpie upgrade can't install a release beside it. With Docker: pull the new image and run docker compose up -d (docs/operations.md → Upgrades).`,
    );
  }
  const changes = await git(checkout, ["status", "--porcelain", "--untracked-files=normal"]);
  if (changes) {
    const lines = changes.split("\n");
    throw new UpgradeError(
      "upgrade.local_changes",
      `${checkout} has local changes, which a new release would not have:\n${lines
        .slice(0, 10)
        .map((line) => `    ${line}`)
        .join(
          "\n",
        )}${lines.length > 10 ? `\n    … ${lines.length - 10} more` : ""}\n  Commit them (to a branch you upgrade to with --to), or undo them (git stash), then run magpie upgrade again.`,
    );
  }
  const manifest = readManifest(path.join(checkout, "package.json"));
  return {
    link,
    checkout,
    releasesDir: lstatSync(link).isSymbolicLink()
      ? path.dirname(checkout)
      : path.join(path.dirname(link), `${path.basename(link)}-releases`),
    revision: await git(checkout, ["rev-parse", "HEAD"]),
    version: manifest?.version ?? "unknown",
  };
}

/** A release's directory name: the first 12 hex digits of its commit. */
export function releaseName(revision: string): string {
  return revision.slice(0, 12);
}

/**
 * Makes `link` a symbolic link, once: a checkout at `link` is moved into `releasesDir` and `link` points to it.
 * Nothing running notices — it is the same directory under a second name. Returns the checkout's new path.
 */
export function adoptInstall(install: Install): string {
  if (lstatSync(install.link).isSymbolicLink()) return install.checkout;
  mkdirSync(install.releasesDir, { recursive: true });
  const moved = path.join(install.releasesDir, releaseName(install.revision));
  if (existsSync(moved)) rmSync(moved, { recursive: true, force: true });
  renameSync(install.link, moved);
  // The moment between these two steps is the only one in which `link` is missing.
  try {
    symlinkSync(moved, install.link, "dir");
  } catch (error) {
    renameSync(moved, install.link);
    throw error;
  }
  install.checkout = moved;
  return moved;
}

/** Points `link` at `release` in one rename (a new link under a temporary name, renamed over the old one). */
export function pointInstallAt(link: string, release: string): void {
  const temporary = `${link}.switch-${process.pid}`;
  rmSync(temporary, { force: true });
  symlinkSync(release, temporary, "dir");
  renameSync(temporary, link);
}
