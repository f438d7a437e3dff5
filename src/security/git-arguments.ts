import path from "node:path";
import { ToolError } from "../core/tool-error.js";
import { GuardRefusal } from "./guard-refusal.js";
import { sanitizedEnv } from "./shell-env.js";

/** Options that make git run another program or skip safety hooks (DESIGN.md). */
const FORBIDDEN_OPTIONS = [
  "--exec",
  "--upload-pack",
  "--receive-pack",
  "--pager",
  "--editor",
  "--no-verify",
  "--config-env",
  "--template",
];
const SHELL_METACHARACTERS = /[;&|`$<>\\\0]|\r/;
const NEWLINE = /\n/;
const BRANCH_CHARACTERS = /^[A-Za-z0-9._/@+-]+$/;

/** A plain branch name: no leading `-`, no `..` or `//`, not ending in `.` or `/`. (Checked piece by piece:
 * one regex with lookaheads for all of it was super-linear.) */
function isBranchName(value: string): boolean {
  return (
    BRANCH_CHARACTERS.test(value) &&
    !value.startsWith("-") &&
    !value.includes("..") &&
    !value.includes("//") &&
    !value.endsWith(".") &&
    !value.endsWith("/")
  );
}

/**
 * Refuses git arguments that could smuggle options or shell syntax: anything starting with `-` where a value is
 * expected, the forbidden options anywhere, and shell metacharacters. `kind` names the parameter in the error.
 */
export function checkGitArgument(value: string, kind: "message" | "path" | "branch"): void {
  const lowered = value.toLowerCase();
  const forbidden = FORBIDDEN_OPTIONS.find((option) => lowered.includes(option));
  if (forbidden) {
    throw new GuardRefusal(
      "git.option_injection",
      `The ${kind} '${value}' contains the forbidden option ${forbidden}. Remove it; git_operations never passes it.`,
    );
  }
  if (kind !== "message" && value.startsWith("-")) {
    throw new GuardRefusal(
      "git.option_injection",
      `The ${kind} '${value}' starts with '-' and would be read as an option. Use a plain name (for a file starting with '-', prefix it with './').`,
    );
  }
  if (kind === "path" && value.startsWith(":")) {
    throw new GuardRefusal(
      "git.option_injection",
      `The path '${value}' uses pathspec magic (':'), which can reach outside the working directory. Use a plain relative path.`,
    );
  }
  if (SHELL_METACHARACTERS.test(value) || (kind !== "message" && NEWLINE.test(value))) {
    throw new GuardRefusal(
      "git.shell_metacharacters",
      `The ${kind} '${value}' contains shell metacharacters (; & | \` $ < > \\ or control characters). Remove them.`,
    );
  }
  if (kind === "branch" && !isBranchName(value)) {
    throw new ToolError(
      "git.invalid_branch",
      `'${value}' is not a valid branch name. Use letters, digits, '.', '_', '-' and '/'.`,
    );
  }
}

/**
 * `-c` overrides on every git call (DESIGN.md → git). Command-line config outranks the repository's, so a
 * planted `.git/config` can't undo them: git starts no program but itself.
 */
export const HARDENING = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.pager=cat",
  "core.editor=true",
  "sequence.editor=true",
  "core.askPass=",
  "core.sshCommand=/bin/false",
  "core.gitProxy=",
  "diff.external=",
  "safe.bareRepository=explicit",
  "commit.gpgsign=false",
  "tag.gpgSign=false",
  "log.showSignature=false",
  "gpg.program=/bin/false",
  "gpg.openpgp.program=/bin/false",
  "gpg.ssh.program=/bin/false",
  "gpg.x509.program=/bin/false",
  "credential.helper=",
  "protocol.ext.allow=never",
  "submodule.recurse=false",
  "diff.ignoreSubmodules=all",
  "status.submoduleSummary=false",
  "gc.auto=0",
  "maintenance.auto=false",
].flatMap((setting) => ["-c", setting]);

/**
 * The environment git runs with: no system or global config, and no repository discovery above the
 * workspace or an allowed path (their parents are ceilings).
 */
export function gitEnvironment(roots: string[]): Record<string, string> {
  const ceilings = [...new Set(roots.map((root) => path.dirname(root)))];
  return sanitizedEnv(process.env, {
    GIT_TERMINAL_PROMPT: "0",
    GIT_PAGER: "cat",
    GIT_EDITOR: "true",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CEILING_DIRECTORIES: ceilings.join(":"),
  });
}

const DRIVER_KEY = /^(filter|diff|merge)\.(.+)\.([^.]+)$/;
/** Per driver kind, the keys that name a program, and what disables each. */
const DRIVER_OVERRIDES: Record<string, string[]> = {
  filter: ["clean=", "smudge=", "process=", "required=false"],
  diff: ["command=", "textconv="],
  merge: ["driver="],
};

/**
 * `-c` settings that disable every filter, diff and merge driver named in `git config --null --get-regexp`
 * output (`key\nvalue\0` records), so a driver planted in the repository's config (or a file it includes) never runs.
 */
export function neutralizeDrivers(listing: string): string[] {
  const overrides = new Set<string>();
  for (const record of listing.split("\0")) {
    const key = record.split("\n")[0]?.trim() ?? "";
    const match = DRIVER_KEY.exec(key);
    if (!match) continue;
    const [, kind, name] = match as unknown as [string, string, string];
    for (const setting of DRIVER_OVERRIDES[kind] ?? []) overrides.add(`${kind}.${name}.${setting}`);
  }
  return [...overrides].flatMap((setting) => ["-c", setting]);
}
