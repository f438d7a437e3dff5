import {
  closeSync,
  existsSync,
  lchownSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import { errorCode, errorMessage } from "../lib/errors.js";
import { moveDatabaseAside, restoreDatabase } from "../store/restore.js";
import { carryOver, unansweredSince } from "./carry-over.js";
import { syntheticTurn, type TurnCheck, waitReady } from "./checks.js";
import {
  adoptInstall,
  findInstall,
  type Install,
  MAIN_SCRIPT,
  pointInstallAt,
  releaseName,
} from "./install.js";
import { type InstanceInfo, readInstance, runningInstance } from "./instance.js";
import { tellOwner } from "./notice.js";
import { environmentOf, isAlive } from "./process-info.js";
import { installRelease, type Release, resolveTarget } from "./release.js";
import { type ServiceControl, type Started, serviceControlFor, stopPid } from "./service.js";
import { restoreFiles, type Snapshot, takeSnapshot } from "./snapshot.js";
import { UpgradeError } from "./upgrade-error.js";

/** Releases kept in the releases directory: the live one, the one before (to roll back to by hand), one more. */
const KEEP_RELEASES = 3;

export interface UpgradeOptions {
  config: MagpieConfig;
  /** `--to`: a version, tag, branch or commit (default: the newest version tag, else origin's default branch). */
  to?: string;
  /** How long the new release gets to be ready and answer. */
  timeoutMs?: number;
  /** Progress lines for the terminal. */
  say: (line: string) => void;
}

export type UpgradeOutcome =
  | { status: "current"; revision: string }
  | { status: "upgraded"; from: string; to: Release; turn: TurnCheck }
  /** Nothing was stopped: the release could not be installed. */
  | { status: "not-installed"; error: string }
  /** `recovered`: the previous release runs and passed its checks; `problems`: the rollback's steps that failed. */
  | { status: "rolled-back"; error: string; recovered: boolean; problems: string[] };

/**
 * `magpie upgrade`: snapshot, install beside, switch, start, check — and on any failure after the switch, put
 * the previous release and database back and start them (DESIGN.md → CLI and HTTP).
 */
export async function runUpgrade(options: UpgradeOptions): Promise<UpgradeOutcome> {
  const { config, say } = options;
  const dataDir = path.resolve(config.dataDir);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const releaseLock = lock(dataDir);
  try {
    const instance = runningInstance(dataDir);
    if (!instance) {
      throw new UpgradeError(
        "upgrade.not_running",
        `No Magpie is running on ${dataDir}. magpie upgrade restarts the running Magpie the way it was started; start it first (or upgrade by hand: docs/operations.md → Upgrades).`,
      );
    }
    if (instance.mode === "chat") {
      throw new UpgradeError(
        "upgrade.chat_mode",
        `The Magpie on ${dataDir} is a terminal chat (magpie chat, pid ${instance.pid}), which can't be restarted detached. Quit it, start Magpie with magpie start (or its service), then upgrade.`,
      );
    }
    const install = await findInstall(instance.argv[0] ?? "");
    refuseInside(install, dataDir, "dataDir");
    refuseInside(install, path.resolve(config.workspace), "workspace");
    const target = await resolveTarget(install, options.to);
    if (target.revision === install.revision) {
      say(`✓ Magpie ${install.version} is already at ${target.ref} (${releaseName(target.revision)}).`);
      return { status: "current", revision: install.revision };
    }
    const control = serviceControlFor(instance);
    const localFiles = [instance.configPath, ...config.envFiles, path.join(instance.cwd, ".env")]
      .filter((file): file is string => file !== null && existsSync(file))
      .filter((file, index, all) => all.indexOf(file) === index);
    say(
      `Upgrading Magpie ${install.version} (${releaseName(install.revision)}, ${install.link}) to ${target.ref} (${releaseName(target.revision)}); it runs as ${control.description}.`,
    );
    try {
      adoptInstall(install);
    } catch (error) {
      throw new UpgradeError(
        "upgrade.adopt_failed",
        `Could not move ${install.link} into ${install.releasesDir} and link it (${errorMessage(error)}). Run magpie upgrade as the user who owns the install (e.g. with sudo).`,
      );
    }
    const snapshot = await takeSnapshot({
      dataDir,
      files: localFiles,
      revision: install.revision,
      version: install.version,
      checkout: install.checkout,
    });
    say(`✓ Snapshot: database, ${snapshot.files.length} config/.env file(s) and revision in ${snapshot.dir}`);

    let release: Release;
    try {
      const buildLog = path.join(dataDir, "logs", `upgrade-${releaseName(target.revision)}-build.log`);
      say(`Installing ${target.ref} in ${path.join(install.releasesDir, releaseName(target.revision))} …`);
      release = await installRelease({
        install,
        target,
        localFiles: localFiles.filter((file) => isInside(install.checkout, file)),
        buildLog,
      });
    } catch (error) {
      const told = await tellOwner(
        config,
        "Magpie upgrade failed",
        `Installing ${target.ref} failed, so nothing was changed: Magpie ${install.version} keeps running. ${errorMessage(error)}`,
      );
      say(`✗ Installing ${target.ref} failed; Magpie ${install.version} was not stopped and keeps running.`);
      say(`  ${errorMessage(error)}`);
      if (told.length > 0) say(`  The owner was told (${told.join(", ")}).`);
      return { status: "not-installed", error: errorMessage(error) };
    }
    say(
      `✓ Installed Magpie ${release.version} (${releaseName(release.revision)}); ${release.dependencies === "reused" ? "package-lock.json unchanged, so node_modules was reused (no npm ci)" : "dependencies installed with npm ci"}.`,
    );

    const mainScript = path.join(install.link, MAIN_SCRIPT);
    let started: Started | null = null;
    try {
      say(`Stopping Magpie ${install.version} (pid ${instance.pid}) …`);
      await control.stop(instance);
      pointInstallAt(install.link, release.dir);
      say(`Starting Magpie ${release.version} …`);
      started = await startAndCheck(control, { previous: instance, mainScript, dataDir, timeoutMs, release });
      const turn = await syntheticTurn({
        instance: started.instance,
        mainScript,
        env: environmentOf(started.instance.pid) ?? process.env,
        timeoutMs,
      });
      say(`✓ /readyz answered 200; ${turn.summary}`);
      say(
        `✓ Upgraded Magpie ${install.version} → ${release.version} (${releaseName(release.revision)}); pid ${started.instance.pid}, log: ${started.log}.`,
      );
      say(
        `  The previous release stays in ${install.checkout}; the snapshot in ${snapshot.dir} (magpie restore ${snapshot.database}).`,
      );
      pruneReleases(install, [release.dir, install.checkout]);
      return { status: "upgraded", from: install.revision, to: release, turn };
    } catch (error) {
      const message = `Magpie ${release.version} (${release.ref}) failed: ${errorMessage(error)}${started ? "" : ` Its log: ${logOf(control, dataDir, release)}`}`;
      say(`✗ ${message}`);
      return await rollBack({
        ...options,
        dataDir,
        timeoutMs,
        instance,
        install,
        snapshot,
        control,
        release,
        message,
      });
    }
  } finally {
    handOver(dataDir, ["backups", "logs"]);
    releaseLock();
  }
}

async function startAndCheck(control: ServiceControl, options: StartFor): Promise<Started> {
  const started = await startInstance(control, options);
  await waitReady(started.instance, options.timeoutMs, started.exited);
  return started;
}

interface StartFor {
  previous: InstanceInfo;
  mainScript: string;
  dataDir: string;
  timeoutMs: number;
  release: Release;
}

/** Starts `release` the way the previous Magpie ran; resolves once its pid file names it. */
function startInstance(control: ServiceControl, options: StartFor): Promise<Started> {
  return control.start({
    previous: options.previous,
    mainScript: options.mainScript,
    dataDir: options.dataDir,
    logFile: path.join(options.dataDir, "logs", `magpie-${releaseName(options.release.revision)}.log`),
    timeoutMs: options.timeoutMs,
  });
}

/**
 * Stops whatever the failed release left running, moves its database files aside as files (never opened: a release
 * may have left a database SQLite can't read), puts the snapshot's database (and any changed config file) back,
 * points the install at the previous release, tells the owner (a notice in the restored outbox, delivered once it
 * runs, and the phone) and starts it — checked the same way. Each step that fails is said and the rest still run:
 * whatever happened, the previous release is started.
 */
async function rollBack(context: {
  config: MagpieConfig;
  say: (line: string) => void;
  dataDir: string;
  timeoutMs: number;
  instance: InstanceInfo;
  install: Install;
  snapshot: Snapshot;
  control: ServiceControl;
  release: Release;
  message: string;
}): Promise<UpgradeOutcome> {
  const { say, dataDir, install, snapshot, control, instance, release } = context;
  const problems: string[] = [];
  const attempt = async <T>(what: string, action: () => T | Promise<T>): Promise<T | null> => {
    try {
      return await action();
    } catch (error) {
      const problem = `${what} failed: ${errorMessage(error)}`;
      problems.push(problem);
      say(`✗ ${problem}`);
      return null;
    }
  };
  say(`Rolling back to Magpie ${install.version} (${releaseName(install.revision)}) …`);
  await attempt(`Stopping Magpie ${release.version}`, () => stopLeftovers(control, dataDir, instance));

  const database = path.join(dataDir, "magpie.db");
  const aside = await attempt("Moving the failed release's database aside", () =>
    moveDatabaseAside(dataDir, "failed-upgrade"),
  );
  if (aside) {
    say(
      aside.files.length > 0
        ? `✓ The failed release's database files were moved aside, unopened: ${aside.dir} (${aside.files.join(", ")}).`
        : `✓ The failed release left no database files (${aside.dir} is empty).`,
    );
  }
  const unanswered = aside && aside.files.length > 0 ? unansweredSince(aside.dir, snapshot.takenAt) : [];
  const restored = await attempt("Putting the snapshot's database back", () =>
    restoreDatabase({
      dataDir,
      file: snapshot.database,
      asideLabel: "failed-upgrade",
      // The snapshot is this upgrade's own copy of the database the previous release ran with.
      allowNewer: true,
      verifySchema: false,
      keepAside: "files",
    }),
  );
  if (restored) {
    say(`✓ Database put back from ${snapshot.database}.`);
    if (restored.movedAside) {
      say(`✓ What was still at ${database} was moved aside too: ${restored.previous}.`);
    }
    if (unanswered.length > 0) {
      const carried = await attempt("Queueing the messages the failed release did not answer", () =>
        carryOver(database, unanswered),
      );
      if (carried)
        say(
          `✓ ${carried} message(s) the failed release took in and did not answer are queued for ${install.version}.`,
        );
    }
  } else {
    say(
      `  Magpie ${install.version} starts on a new, empty database; put the snapshot back by hand: stop Magpie, magpie restore ${snapshot.database}, start it.`,
    );
  }
  const files = await attempt("Putting the config files back", () => restoreFiles(snapshot));
  for (const file of files ?? []) say(`✓ Put back ${file}.`);
  await attempt("Pointing the install back", () => pointInstallAt(install.link, install.checkout));

  const kept = aside ? ` The failed release's database files are kept in ${aside.dir}.` : "";
  const told = await tellOwner(
    context.config,
    "Magpie upgrade rolled back",
    `Upgrading to ${release.version} (${release.ref}) failed, so Magpie went back to ${install.version}${restored ? " with the database from before the upgrade" : ""}. ${context.message}${kept}${problems.length > 0 ? ` Problems while rolling back: ${problems.join(" ")}` : ""}`,
  );

  const previousRelease = {
    dir: install.checkout,
    revision: install.revision,
    version: install.version,
    ref: "",
  };
  const mainScript = path.join(install.link, MAIN_SCRIPT);
  const started = await attempt(`Starting Magpie ${install.version}`, () =>
    startInstance(control, {
      previous: instance,
      mainScript,
      dataDir,
      timeoutMs: context.timeoutMs,
      release: previousRelease,
    }),
  );
  let checked: TurnCheck | null = null;
  if (started) {
    const ready = await attempt(`Magpie ${install.version}'s /readyz`, () =>
      waitReady(started.instance, context.timeoutMs, started.exited).then(() => true),
    );
    if (ready) {
      checked = await attempt(`Magpie ${install.version}'s synthetic turn`, () =>
        syntheticTurn({
          instance: started.instance,
          mainScript,
          env: environmentOf(started.instance.pid) ?? process.env,
          timeoutMs: context.timeoutMs,
        }),
      );
    }
  }
  const toldLine =
    told.length > 0
      ? `  The owner was told (${told.join(", ")}).`
      : "  No owner chat or phone provider to tell.";
  if (started && checked && problems.length === 0) {
    say(
      `✓ Rolled back: Magpie ${install.version} runs again (pid ${started.instance.pid}, log: ${started.log}); /readyz 200; ${checked.summary}.`,
    );
    say(toldLine);
    return { status: "rolled-back", error: context.message, recovered: true, problems };
  }
  say(
    started
      ? `✗ Rolled back with problems: Magpie ${install.version} runs (pid ${started.instance.pid}, log: ${started.log}), but ${problems.length} step(s) failed (above).`
      : `✗ The rollback could not start Magpie ${install.version}: Magpie is down.`,
  );
  say(toldLine);
  say(
    `  By hand: stop Magpie; ln -sfn ${install.checkout} ${install.link}; magpie restore ${snapshot.database}; start Magpie. Config copies are in ${snapshot.dir}.${aside ? ` The failed release's database files are in ${aside.dir}.` : ""}`,
  );
  await tellOwner(
    context.config,
    started ? "Magpie upgrade rolled back with problems" : "Magpie upgrade failed and could not roll back",
    `${context.message} ${started ? `Magpie ${install.version} runs again, but` : "Magpie is down:"} ${problems.join(" ")} The snapshot is in ${snapshot.dir}.${kept}`,
  );
  return { status: "rolled-back", error: context.message, recovered: started !== null, problems };
}

/** Stops the failed release: the unit, or any process other than the old one that the pid file names. */
async function stopLeftovers(
  control: ServiceControl,
  dataDir: string,
  previous: InstanceInfo,
): Promise<void> {
  const current = readInstance(dataDir);
  if (current && current.pid !== previous.pid && isAlive(current.pid)) await control.stop(current);
  else if (control.description.startsWith("systemd")) await control.stop(previous);
  if (current && current.pid !== previous.pid && isAlive(current.pid)) await stopPid(current.pid);
}

function logOf(control: ServiceControl, dataDir: string, release: Release): string {
  return control.description.startsWith("systemd")
    ? control.description.replace("systemd unit ", "journalctl -u ")
    : path.join(dataDir, "logs", `magpie-${releaseName(release.revision)}.log`);
}

/**
 * Run with sudo, what upgrade wrote into `dataDir` (snapshots, logs) goes to the data directory's owner, so Magpie's
 * own user can still write there (`magpie backup` into backups/, a detached Magpie's log).
 */
function handOver(dataDir: string, names: string[]): void {
  if (process.getuid?.() !== 0) return;
  const { uid, gid } = statSync(dataDir);
  const walk = (target: string) => {
    lchownSync(target, uid, gid);
    if (lstatSync(target).isDirectory())
      for (const name of readdirSync(target)) walk(path.join(target, name));
  };
  for (const name of names) if (existsSync(path.join(dataDir, name))) walk(path.join(dataDir, name));
}

/** One upgrade at a time per data directory: `<dataDir>/upgrade.lock` holds the pid of the one running. */
function lock(dataDir: string): () => void {
  const file = path.join(dataDir, "upgrade.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const descriptor = openSync(file, "wx", 0o600);
      writeSync(descriptor, String(process.pid));
      closeSync(descriptor);
      return () => rmSync(file, { force: true });
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
      const holder = Number(readFileSync(file, "utf8"));
      if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
        throw new UpgradeError(
          "upgrade.busy",
          `Another magpie upgrade (pid ${holder}) is running on ${dataDir}.`,
        );
      }
      rmSync(file, { force: true });
    }
  }
  throw new UpgradeError("upgrade.busy", `Could not take ${file}; remove it if no upgrade is running.`);
}

function isInside(directory: string, file: string): boolean {
  const relative = path.relative(directory, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
}

/** State inside the checkout would be left behind in the old release directory (or shared by two releases). */
function refuseInside(install: Install, directory: string, key: string): void {
  if (
    directory === install.checkout ||
    isInside(install.checkout, directory) ||
    isInside(install.link, directory)
  ) {
    throw new UpgradeError(
      "upgrade.state_in_install",
      `${key} (${directory}) is inside the install ${install.link}; a new release is installed beside it and would not see it. Move it out (e.g. dataDir: /var/lib/magpie), then upgrade.`,
    );
  }
}

/** Deletes all but the newest releases, never one of `keep`. */
function pruneReleases(install: Install, keep: string[]): void {
  const releases = readdirSync(install.releasesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && /^[0-9a-f]{12}$/.test(entry.name))
    .map((entry) => path.join(install.releasesDir, entry.name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  let kept = 0;
  for (const dir of releases) {
    if (keep.includes(dir) || kept < KEEP_RELEASES - keep.length) {
      if (!keep.includes(dir)) kept++;
      continue;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
