import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { backupDatabase, defaultBackupFile } from "../store/backup.js";

/** What an upgrade saved before it changed anything, in `<dataDir>/backups/upgrade-<UTC time>/`. */
export interface Snapshot {
  dir: string;
  /** The database (SQLite online backup, taken while Magpie runs). */
  database: string;
  /** Config and `.env` files: where each lives and its copy. */
  files: Array<{ original: string; copy: string }>;
  /** The install's revision and version before the upgrade. */
  revision: string;
  version: string;
  checkout: string;
  /** When the database copy began (ms): messages received since are not in it. */
  takenAt: number;
}

/** Copies the database, the config and `.env` files, and records the install's revision. */
export async function takeSnapshot(options: {
  dataDir: string;
  files: string[];
  revision: string;
  version: string;
  checkout: string;
  now?: Date;
}): Promise<Snapshot> {
  const stamped = path.basename(defaultBackupFile(options.dataDir, options.now));
  const dir = path.join(
    options.dataDir,
    "backups",
    stamped.replace(/^magpie-/, "upgrade-").replace(/\.db$/, ""),
  );
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const database = path.join(dir, "magpie.db");
  const takenAt = Date.now();
  await backupDatabase(path.join(options.dataDir, "magpie.db"), database);
  const files = options.files
    .filter((file) => existsSync(file))
    .map((original, index) => {
      const copy = path.join(dir, `${index + 1}-${path.basename(original)}`);
      copyFileSync(original, copy);
      chmodSync(copy, statSync(original).mode & 0o777);
      return { original, copy };
    });
  const snapshot: Snapshot = {
    dir,
    database,
    files,
    revision: options.revision,
    version: options.version,
    checkout: options.checkout,
    takenAt,
  };
  writeFileSync(path.join(dir, "upgrade.json"), `${JSON.stringify(snapshot, null, 2)}\n`, { mode: 0o600 });
  return snapshot;
}

/** Puts back any snapshotted file whose content changed since; returns the ones put back. */
export function restoreFiles(snapshot: Snapshot): string[] {
  const restored: string[] = [];
  for (const { original, copy } of snapshot.files) {
    const now = existsSync(original) ? readFileSync(original) : null;
    if (now?.equals(readFileSync(copy))) continue;
    copyFileSync(copy, original);
    restored.push(original);
  }
  return restored;
}
