import { GuardRefusal } from "./guard-refusal.js";

export interface ShellPolicy {
  allowCommands?: string[];
  denyPatterns: string[];
}

/** The executables a command line starts (first word of each `;`, `&&`, `||`, `|` segment). */
export function commandNames(command: string): string[] {
  return command
    .split(/\|\||&&|[;|&\n]|\$\(|[<>]\(|`/)
    .map((segment) => segment.trim().replace(/^\(+/, "").trim())
    .filter(Boolean)
    .map((segment) => {
      const words = segment.split(/\s+/).filter((word) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word));
      const first = words[0] ?? "";
      return first.split("/").pop() ?? first;
    })
    .filter(Boolean);
}

/**
 * Applies `tools.shell.denyPatterns` (regular expressions on the whole command) and `tools.shell.allowCommands`
 * (every executable in the line must be listed). Throws `shell.denied` with the reason.
 */
export function checkShellPolicy(command: string, policy: ShellPolicy): void {
  for (const pattern of policy.denyPatterns) {
    if (new RegExp(pattern).test(command)) {
      throw new GuardRefusal(
        "shell.denied",
        `The command matches the deny pattern /${pattern}/ (tools.shell.denyPatterns). Use a different approach or ask the owner to change the policy.`,
      );
    }
  }
  if (policy.allowCommands) {
    const allowed = new Set(policy.allowCommands);
    const names = commandNames(command);
    const refused = names.filter((name) => !allowed.has(name));
    if (names.length === 0 || refused.length > 0) {
      throw new GuardRefusal(
        "shell.denied",
        `${refused.length ? `'${refused.join("', '")}' is` : "This command is"} not in tools.shell.allowCommands (${policy.allowCommands.join(", ")}). Use one of those commands.`,
      );
    }
  }
}
