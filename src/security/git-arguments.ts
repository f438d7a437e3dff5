import { ToolError } from "../tools/define-tool.js";
import { GuardRefusal } from "./guard-refusal.js";

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
const BRANCH_NAME = /^(?!-)(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9._/@+-]+(?<![./])$/;

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
  if (kind === "branch" && !BRANCH_NAME.test(value)) {
    throw new ToolError(
      "git.invalid_branch",
      `'${value}' is not a valid branch name. Use letters, digits, '.', '_', '-' and '/'.`,
    );
  }
}
