import { execa } from "execa";
import { UpgradeError } from "./upgrade-error.js";

/** Runs `git <args>` in `cwd` (never prompting for credentials); resolves to its trimmed output. */
export async function git(cwd: string, args: string[]): Promise<string> {
  const result = await execa("git", args, {
    cwd,
    reject: false,
    env: { GIT_TERMINAL_PROMPT: "0" },
  });
  if (result.exitCode !== 0) {
    const detail = (result.stderr || result.stdout || result.message || "").trim().slice(0, 2000);
    throw new UpgradeError("upgrade.git_failed", `git ${args.join(" ")} failed in ${cwd}: ${detail}`);
  }
  return result.stdout.trim();
}

/** `git <args>`, or null when git fails (a ref that doesn't exist, no remote). */
export async function gitOrNull(cwd: string, args: string[]): Promise<string | null> {
  try {
    return await git(cwd, args);
  } catch {
    return null;
  }
}
