import fs from "node:fs/promises";
import { ToolError } from "../core/tool-error.js";
import { type FileAccess, type GuardFinding, judgePath, strictest } from "../security/file-guard.js";
import { GuardRefusal } from "../security/guard-refusal.js";
import { isMagpieState } from "../security/magpie-state.js";
import { type PathScope, type ResolvedPath, resolveToolPath, scopeOf } from "../security/path-resolver.js";
import type { ToolContext } from "./context.js";

/** Normalizes a path and enforces the file guard for one read or write; returns where it really lands. */
export async function guardPath(
  context: ToolContext,
  requested: string,
  access: FileAccess,
): Promise<ResolvedPath> {
  const scope = guardScope(context);
  const resolved = await resolveToolPath(requested, scope);
  await enforceFindings(
    context,
    judgePath(resolved, access, context.config.security.level, scope),
    `${access} ${resolved.real}`,
  );
  return resolved;
}

/** Creates the workspace on first use (a fresh install has none yet) and returns the guard scope. */
export async function ensureWorkspace(context: ToolContext): Promise<PathScope> {
  await fs.mkdir(context.config.workspace, { recursive: true });
  return guardScope(context);
}

/** The scope file tools judge paths in (a test may override the home directory through services). */
export function guardScope(context: ToolContext): PathScope {
  return scopeOf(context.config, context.services.homeDir);
}

/**
 * For walks (file_list, file_find, file_grep) of a directory the guard let through: true for an entry that is
 * Magpie's own state, so it is neither listed nor read (an allowed path may contain the install directory).
 */
export function hiddenFromWalk(scope: PathScope): (absolute: string) => boolean {
  return (absolute) => isMagpieState(absolute, scope.state);
}

/**
 * Applies the strictest finding: Deny throws a ToolError named by the rule ID with the suggestion; Warn adds a
 * warning and asks for approval when `security.approvals.require` lists "guard:warn".
 */
export async function enforceFindings(
  context: ToolContext,
  findings: GuardFinding[],
  action: string,
): Promise<void> {
  const worst = strictest(findings);
  if (!worst || worst.verdict === "allow") return;
  const hint = `${worst.rule.why}. Suggestion: ${worst.rule.suggestion}.`;
  if (worst.verdict === "deny") {
    throw new GuardRefusal(
      worst.rule.id,
      `Refused by ${worst.rule.id} (security.level ${context.config.security.level}): ${worst.path} — ${hint}`,
    );
  }
  if (
    context.config.security.approvals.require.includes("guard:warn") &&
    (!context.canAsk || !context.approver)
  ) {
    throw new GuardRefusal(
      worst.rule.id,
      `Refused by ${worst.rule.id}: ${worst.path} needs an owner's approval (Warn at security.level ${context.config.security.level}) and there is no one to ask in this ${context.origin === "user" ? "guest's turn" : `${context.origin} turn`}; nothing was done — ${hint}`,
    );
  }
  for (const finding of findings) {
    if (finding.verdict === "warn")
      context.warn(`${finding.rule.id}: ${finding.path} — ${finding.rule.why}.`);
  }
  const decision = await context.requireApproval(
    `${context.agent}: ${action} (${worst.rule.id})`,
    "guard:warn",
    {
      classes: findings.filter((finding) => finding.verdict === "warn").map(denialClassOf),
    },
  );
  if (decision === "timeout") {
    throw new ToolError(
      "approval.timeout",
      `Nobody approved ${worst.rule.id} for ${worst.path} in time; nothing was done.`,
    );
  }
  if (decision !== "approved") {
    throw new ToolError(
      "approval.denied",
      `The owner denied ${worst.rule.id} for ${worst.path}; nothing was done.`,
    );
  }
}

/**
 * What an owner's denial of a Warn covers for the rest of the turn: a mass deletion as a whole (a split repeat is
 * the same request), any other rule for its path.
 */
function denialClassOf(finding: GuardFinding): string {
  return finding.rule.id === "file.apply_patch_delete_many"
    ? finding.rule.id
    : `${finding.rule.id} ${finding.path}`;
}
