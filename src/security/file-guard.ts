import path from "node:path";
import {
  GUARD_PATHS,
  isSensitivePath,
  isSensitiveWritePath,
  isSystemReadPath,
  isSystemWritePath,
} from "./guard-path-lists.js";
import { isMagpieState, type MagpieStatePaths } from "./magpie-state.js";
import type { ResolvedPath } from "./path-resolver.js";

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
  | "file.magpie_state"
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
  "file.magpie_state": {
    id: "file.magpie_state",
    why: "Magpie's config, loaded .env files, database, spill and install directory hold its credentials and its allowlist",
    suggestion: "ask the owner to change the configuration by hand",
    verdicts: { low: "deny", medium: "deny", high: "deny" },
  },
  "file.apply_patch_delete_many": {
    id: "file.apply_patch_delete_many",
    why: "deleting 5 or more files in one turn (in one patch or several) suggests a hallucinated clean-up",
    suggestion: "check the list, and ask the owner before deleting that many",
    verdicts: { low: "deny", medium: "warn", high: "warn" },
  },
};

/** Patches deleting at least this many files in one turn (counted over its patches) trigger `file.apply_patch_delete_many`. */
export const MASS_DELETE_THRESHOLD = 5;

/** One rule that matched a path, with the verdict the current level gives it. */
export interface GuardFinding {
  rule: FileGuardRule;
  verdict: Verdict;
  /** The path the rule matched (real path). */
  path: string;
}

/** What a path is judged against besides the workspace: the home directory and Magpie's own state. */
export interface JudgeScope {
  home: string;
  state: MagpieStatePaths;
}

/**
 * Judges one resolved path for a read or a write. The lexical path, the real path and every sensitive or state
 * file the path is a hard link of are all checked, so neither a symlink nor a hard link can hide a sensitive
 * target, and a sensitive name can't be made to look harmless.
 */
export function judgePath(
  resolved: ResolvedPath,
  access: FileAccess,
  level: SecurityLevel,
  scope: JudgeScope,
): GuardFinding[] {
  const candidates = [...new Set([resolved.real, resolved.lexical, ...(resolved.sameFileAs ?? [])])];
  // Each rule remembers the first candidate it matched, so a refusal can name the file a hard link stands for.
  const matched = new Map<FileGuardRuleId, string>();
  const match = (id: FileGuardRuleId, candidate: string) => {
    if (!matched.has(id)) matched.set(id, candidate);
  };
  for (const candidate of candidates) {
    if (isMagpieState(candidate, scope.state)) match("file.magpie_state", candidate);
    if (access === "read") {
      if (isSystemReadPath(candidate)) match("file.system_path_read", candidate);
      if (isSensitivePath(candidate, scope.home)) match("file.sensitive_path_read", candidate);
    } else {
      if (isSystemWritePath(candidate)) match("file.system_path_write", candidate);
      if (isSensitiveWritePath(candidate, scope.home)) match("file.sensitive_path_write", candidate);
      if (candidate.split(path.sep).includes(GUARD_PATHS.protectedComponent))
        match("file.protected_file_overwrite", candidate);
    }
  }
  if (!resolved.insideWorkspace) {
    match(access === "read" ? "file.outside_workspace_read" : "file.outside_workspace_write", resolved.real);
  }
  const aliases = new Set(resolved.sameFileAs ?? []);
  return [...matched].map(([id, candidate]) => ({
    rule: FILE_GUARD_RULES[id],
    verdict: FILE_GUARD_RULES[id].verdicts[level],
    path: aliases.has(candidate) ? `${resolved.real} (a hard link of ${candidate})` : resolved.real,
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
