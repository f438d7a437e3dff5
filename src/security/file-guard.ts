import path from "node:path";
import { isWithin, type ResolvedPath } from "./path-resolver.js";

export type SecurityLevel = "low" | "medium" | "high";
export type Verdict = "deny" | "warn" | "allow";
export type FileAccess = "read" | "write";

export type FileGuardRuleId =
  | "file.system_path_read"
  | "file.sensitive_path_read"
  | "file.outside_workspace_read"
  | "file.system_path_write"
  | "file.sensitive_path_write"
  | "file.outside_workspace_write"
  | "file.protected_file_overwrite"
  | "file.apply_patch_delete_many";

export interface FileGuardRule {
  id: FileGuardRuleId;
  why: string;
  suggestion: string;
  verdicts: Record<SecurityLevel, Verdict>;
}

/** The table from docs/file-guard.md: rule ID, why, suggestion, verdict per `security.level`. */
export const FILE_GUARD_RULES: Record<FileGuardRuleId, FileGuardRule> = {
  "file.system_path_read": {
    id: "file.system_path_read",
    why: "virtual/device filesystems expose kernel state, processes and credentials",
    suggestion: "use an inspection command (`uname`, `env`)",
    verdicts: { low: "deny", medium: "deny", high: "deny" },
  },
  "file.sensitive_path_read": {
    id: "file.sensitive_path_read",
    why: "credential and key files would leak secrets into the model's context",
    suggestion: "use a command that doesn't print the secret (`ssh-keygen -l -f`)",
    verdicts: { low: "deny", medium: "deny", high: "warn" },
  },
  "file.outside_workspace_read": {
    id: "file.outside_workspace_read",
    why: "the target is outside the workspace",
    suggestion: "check the path, or copy the file into the workspace",
    verdicts: { low: "deny", medium: "warn", high: "allow" },
  },
  "file.system_path_write": {
    id: "file.system_path_write",
    why: "writing system paths breaks the OS",
    suggestion: "use project-level configuration",
    verdicts: { low: "deny", medium: "deny", high: "deny" },
  },
  "file.sensitive_path_write": {
    id: "file.sensitive_path_write",
    why: "credential files and shell start-up files are persistence / tampering vectors",
    suggestion: "change project-local configuration instead",
    verdicts: { low: "deny", medium: "deny", high: "deny" },
  },
  "file.outside_workspace_write": {
    id: "file.outside_workspace_write",
    why: "the target is outside the workspace",
    suggestion: "write inside the workspace",
    verdicts: { low: "deny", medium: "warn", high: "allow" },
  },
  "file.protected_file_overwrite": {
    id: "file.protected_file_overwrite",
    why: "writing `.git/` internals corrupts the repository",
    suggestion: "use `git config` or edit by hand",
    verdicts: { low: "deny", medium: "deny", high: "warn" },
  },
  "file.apply_patch_delete_many": {
    id: "file.apply_patch_delete_many",
    why: "deleting 5 or more files in one patch suggests a hallucinated clean-up",
    suggestion: "split the patch or check the list",
    verdicts: { low: "deny", medium: "warn", high: "warn" },
  },
};

/** Patches deleting at least this many files trigger `file.apply_patch_delete_many`. */
export const MASS_DELETE_THRESHOLD = 5;

const SYSTEM_READ_PREFIXES = ["/proc", "/sys", "/dev"];
const SYSTEM_WRITE_PREFIXES = [
  "/etc",
  "/usr",
  "/boot",
  "/sbin",
  "/bin",
  "/lib",
  "/lib64",
  "/proc",
  "/sys",
  "/dev",
];
const SENSITIVE_EXACT = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers"];
const SENSITIVE_HOME_PREFIXES = [".ssh", ".gnupg", ".aws", ".config/gcloud"];
const SENSITIVE_BASENAMES = [".env", ".netrc"];
const SHELL_RC_FILES = [".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile"];
const PROTECTED_COMPONENT = ".git";

/** One rule that matched a path, with the verdict the current level gives it. */
export interface GuardFinding {
  rule: FileGuardRule;
  verdict: Verdict;
  /** The path the rule matched (real path). */
  path: string;
}

function isSensitive(candidate: string, home: string): boolean {
  if (SENSITIVE_EXACT.includes(candidate)) return true;
  if (SENSITIVE_HOME_PREFIXES.some((prefix) => isWithin(candidate, path.join(home, prefix)))) return true;
  return SENSITIVE_BASENAMES.includes(path.basename(candidate));
}

function isShellStartupFile(candidate: string, home: string): boolean {
  return SHELL_RC_FILES.some((file) => candidate === path.join(home, file));
}

/**
 * Judges one resolved path for a read or a write. Both the lexical and the real path are checked, so a
 * symlink can neither hide a sensitive target nor make a sensitive name look harmless.
 */
export function judgePath(
  resolved: ResolvedPath,
  access: FileAccess,
  level: SecurityLevel,
  home: string,
): GuardFinding[] {
  const candidates = [...new Set([resolved.real, resolved.lexical])];
  const matched = new Set<FileGuardRuleId>();
  for (const candidate of candidates) {
    if (access === "read") {
      if (SYSTEM_READ_PREFIXES.some((prefix) => isWithin(candidate, prefix)))
        matched.add("file.system_path_read");
      if (isSensitive(candidate, home)) matched.add("file.sensitive_path_read");
    } else {
      if (SYSTEM_WRITE_PREFIXES.some((prefix) => isWithin(candidate, prefix)))
        matched.add("file.system_path_write");
      if (isSensitive(candidate, home) || isShellStartupFile(candidate, home))
        matched.add("file.sensitive_path_write");
      if (candidate.split(path.sep).includes(PROTECTED_COMPONENT))
        matched.add("file.protected_file_overwrite");
    }
  }
  if (!resolved.insideWorkspace) {
    matched.add(access === "read" ? "file.outside_workspace_read" : "file.outside_workspace_write");
  }
  return [...matched].map((id) => ({
    rule: FILE_GUARD_RULES[id],
    verdict: FILE_GUARD_RULES[id].verdicts[level],
    path: resolved.real,
  }));
}

/** The mass-deletion rule for apply_patch; null when the patch deletes fewer files. */
export function judgeDeletions(deletedFiles: number, level: SecurityLevel): GuardFinding | null {
  if (deletedFiles < MASS_DELETE_THRESHOLD) return null;
  const rule = FILE_GUARD_RULES["file.apply_patch_delete_many"];
  return { rule, verdict: rule.verdicts[level], path: `${deletedFiles} files` };
}

const SEVERITY: Record<Verdict, number> = { allow: 0, warn: 1, deny: 2 };

/** The strictest finding (deny over warn over allow); null when nothing matched. */
export function strictest(findings: GuardFinding[]): GuardFinding | null {
  let worst: GuardFinding | null = null;
  for (const finding of findings) {
    if (!worst || SEVERITY[finding.verdict] > SEVERITY[worst.verdict]) worst = finding;
  }
  return worst;
}
