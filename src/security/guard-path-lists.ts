import path from "node:path";
import { isWithin } from "./paths.js";

export { isWithin };

/**
 * The path lists of docs/file-guard.md, in one place. Directory entries are prefixes (the directory and
 * everything below it); home entries are relative to the home directory.
 */
export const GUARD_PATHS = {
  /** `file.system_path_read`: virtual, device and system directories. */
  systemRead: [
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/libexec",
    "/private/etc",
    "/private/var",
  ],
  /** `file.system_path_write`. */
  systemWrite: ["/etc", "/usr", "/boot", "/sbin", "/bin", "/lib", "/lib64", "/proc", "/sys", "/dev"],
  /** Never inside the workspace, even when listed in `tools.files.allowedPaths` (DESIGN.md system blocklist). */
  neverInside: [
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/libexec",
    "/usr/local/bin",
    "/usr/local/sbin",
    "/lib",
    "/lib64",
    "/private/etc",
    "/private/var",
  ],
  /** `file.sensitive_path_read` (and write). */
  sensitive: {
    exact: ["/etc/shadow", "/etc/gshadow", "/etc/sudoers"],
    homeDirectories: [".ssh", ".gnupg", ".aws", ".config/gcloud"],
    basenames: [".env", ".netrc"],
  },
  /** `file.sensitive_path_write`, on top of everything sensitive: what a shell, git, cron or the desktop runs at start. */
  startup: {
    homeFiles: [
      ".bashrc",
      ".bash_profile",
      ".bash_login",
      ".bash_logout",
      ".profile",
      ".zshrc",
      ".zprofile",
      ".zshenv",
      ".zlogin",
      ".gitconfig",
    ],
    homeDirectories: [
      ".config/git",
      ".config/fish",
      ".config/systemd",
      ".config/autostart",
      ".local/share/systemd",
      ".ssh",
    ],
    directories: ["/var/spool/cron", "/var/spool/anacron"],
    /** Path prefixes by name: `/etc/cron*` covers crontab, cron.d, cron.daily, cron.allow … */
    namePrefixes: ["/etc/cron", "/etc/anacrontab"],
  },
  /** A path component that marks repository internals (`file.protected_file_overwrite`). */
  protectedComponent: ".git",
} as const;

const underAny = (candidate: string, prefixes: readonly string[]) =>
  prefixes.some((prefix) => isWithin(candidate, prefix));

/** Under a `file.system_path_read` directory. */
export function isSystemReadPath(candidate: string): boolean {
  return underAny(candidate, GUARD_PATHS.systemRead);
}

/** Under a `file.system_path_write` directory. */
export function isSystemWritePath(candidate: string): boolean {
  return underAny(candidate, GUARD_PATHS.systemWrite);
}

/** A credential or key file (`file.sensitive_path_read`). */
export function isSensitivePath(candidate: string, home: string): boolean {
  const { exact, homeDirectories, basenames } = GUARD_PATHS.sensitive;
  if ((exact as readonly string[]).includes(candidate)) return true;
  if (
    underAny(
      candidate,
      homeDirectories.map((entry) => path.join(home, entry)),
    )
  )
    return true;
  return (basenames as readonly string[]).includes(path.basename(candidate));
}

/** A credential file or a file run at start-up (`file.sensitive_path_write`). */
export function isSensitiveWritePath(candidate: string, home: string): boolean {
  if (isSensitivePath(candidate, home)) return true;
  const { homeFiles, homeDirectories, directories, namePrefixes } = GUARD_PATHS.startup;
  if (homeFiles.some((file) => candidate === path.join(home, file))) return true;
  if (
    underAny(
      candidate,
      homeDirectories.map((entry) => path.join(home, entry)),
    )
  )
    return true;
  if (underAny(candidate, directories)) return true;
  return namePrefixes.some((prefix) => candidate.startsWith(prefix));
}

/**
 * The sensitive locations whose files a hard link could alias: exact files and the home files and directories
 * of both lists (the directories are searched a few levels deep by the resolver).
 */
export function sensitiveLocations(home: string): { files: string[]; directories: string[] } {
  return {
    files: [
      ...GUARD_PATHS.sensitive.exact,
      ...GUARD_PATHS.sensitive.basenames.map((name) => path.join(home, name)),
      ...GUARD_PATHS.startup.homeFiles.map((file) => path.join(home, file)),
      "/etc/crontab",
    ],
    directories: [
      ...new Set([
        ...GUARD_PATHS.sensitive.homeDirectories.map((entry) => path.join(home, entry)),
        ...GUARD_PATHS.startup.homeDirectories.map((entry) => path.join(home, entry)),
        ...GUARD_PATHS.startup.directories,
      ]),
    ],
  };
}
