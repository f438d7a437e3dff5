/** The only variables a shell or git child process inherits (DESIGN.md): no API keys, no tokens. */
export const SAFE_ENV_NAMES = [
  "PATH",
  "HOME",
  "TERM",
  "LANG",
  "LC_ALL",
  "LC_CTYPE",
  "USER",
  "SHELL",
  "TMPDIR",
] as const;

const FALLBACK_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** A child environment built from scratch: the safe variables only, plus explicit extras. */
export function sanitizedEnv(
  parent: NodeJS.ProcessEnv = process.env,
  extras: Record<string, string> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of SAFE_ENV_NAMES) {
    const value = parent[name];
    if (typeof value === "string") env[name] = value;
  }
  env.PATH ??= FALLBACK_PATH;
  return { ...env, ...extras };
}
