import path from "node:path";

/**
 * Pinned supply chain for MCP stdio servers: a server started through a launcher that downloads a package at start
 * (`npx`, `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx`, `uvx`, `uv tool run`, `pipx run`) must name an exact version,
 * or every restart runs whatever the registry serves that day. This decides only "is every package it would fetch
 * pinned to one version"; it is a few rules over argv, so no npm/PEP 440 parser library is pulled in for it.
 */

/**
 * Why a server's command is refused, with the fix; null when it is pinned or no launcher is involved. Every word
 * of the command line that names a launcher starts a launch that is checked, wherever it stands: behind a wrapper
 * (`env -u X npx …`, `nice`, `timeout 60`, `sudo`) or inside a shell line (`sh -c "cd /srv && exec npx …"`, whose
 * words are split without quoting rules — a quoted spec keeps its quotes and fails the version check, so a quoted
 * launcher line is refused, never waved through).
 */
export function unpinnedPackage(command: string, args: readonly string[]): string | null {
  const words = [command, ...args].flatMap((word) => word.split(/[\s;&|()`]+/).filter(Boolean));
  let launchers = 0;
  for (let index = 0; index < words.length; index++) {
    if (!LAUNCHERS.has(programOf(words[index]!))) continue;
    if (++launchers > MAX_LAUNCHERS)
      return `the command line names more than ${MAX_LAUNCHERS} package launchers — run the server's program directly, with an exact version`;
    const launcher = launcherOf(words.slice(index));
    const problem = launcher?.check(launcher.rest);
    if (problem) return problem;
  }
  return null;
}

const LAUNCHERS: ReadonlySet<string> = new Set([
  "npx",
  "bunx",
  "pnpx",
  "uvx",
  "npm",
  "bun",
  "pnpm",
  "yarn",
  "uv",
  "pipx",
]);
const MAX_LAUNCHERS = 16;

interface Launcher {
  rest: string[];
  check(rest: string[]): string | null;
}

/** Program name without directory or Windows suffix: `/usr/bin/npx`, `npx.cmd` → `npx`. */
function programOf(word: string): string {
  return path.basename(word).replace(/\.(cmd|exe|ps1|bat)$/i, "");
}

function launcherOf(argv: string[]): Launcher | null {
  const program = programOf(argv[0] ?? "");
  const rest = argv.slice(1);
  switch (program) {
    case "npx":
      return { rest, check: (words) => checkNpmStyle("npx", words, NPX_OPTIONS) };
    case "bunx":
      return { rest, check: (words) => checkNpmStyle("bunx", words, BUNX_OPTIONS) };
    case "pnpx":
      return { rest, check: (words) => checkNpmStyle("pnpx", words, PNPM_OPTIONS) };
    case "uvx":
      return { rest, check: (words) => checkUvx("uvx", words) };
    case "npm":
    case "bun":
    case "pnpm":
    case "yarn":
    case "uv":
    case "pipx":
      return subcommandLauncher(program, rest);
    default:
      return null;
  }
}

/** `npm exec`/`npm x`, `bun x`, `pnpm dlx`, `yarn dlx`, `uv tool run`, `pipx run`: the sub-command decides. */
function subcommandLauncher(program: string, rest: string[]): Launcher | null {
  const options = program === "pnpm" ? PNPM_OPTIONS : program === "npm" ? NPX_OPTIONS : NO_OPTIONS;
  // Options before the sub-command (pnpm --package=x dlx …) count as the launcher's own.
  let index = 0;
  while (index < rest.length && rest[index]!.startsWith("-"))
    index += takesValue(rest[index]!, options) ? 2 : 1;
  const sub = rest[index];
  const before = rest.slice(0, index);
  const after = rest.slice(index + 1);
  const words = [...before, ...after];
  const name = `${program} ${sub}`;
  if (program === "npm" && (sub === "exec" || sub === "x"))
    return { rest: words, check: (list) => checkNpmStyle(name, list, NPX_OPTIONS) };
  if (program === "bun" && sub === "x")
    return { rest: words, check: (list) => checkNpmStyle(name, list, BUNX_OPTIONS) };
  if ((program === "pnpm" || program === "yarn") && sub === "dlx")
    return { rest: words, check: (list) => checkNpmStyle(name, list, PNPM_OPTIONS) };
  if (program === "uv" && sub === "tool" && after[0] === "run")
    return { rest: [...before, ...after.slice(1)], check: (list) => checkUvx("uv tool run", list) };
  if (program === "pipx" && sub === "run") return { rest: words, check: (list) => checkUvx(name, list) };
  return null;
}

interface OptionTable {
  /** Options that take no value. */
  flags: ReadonlySet<string>;
  /** Options followed by a value. */
  valued: ReadonlySet<string>;
  /** Options whose value is a package to fetch. */
  packages: ReadonlySet<string>;
  /** Options that run a shell string: nothing to check, so refused. */
  shell: ReadonlySet<string>;
}

const NPX_OPTIONS: OptionTable = {
  flags: new Set([
    "-y",
    "--yes",
    "--no",
    "-q",
    "--quiet",
    "--silent",
    "--offline",
    "--prefer-offline",
    "--prefer-online",
    "--ignore-existing",
    "--legacy-peer-deps",
    "--workspaces",
    "-ws",
  ]),
  valued: new Set([
    "-p",
    "--package",
    "-c",
    "--call",
    "--registry",
    "--cache",
    "--prefix",
    "--userconfig",
    "-w",
    "--workspace",
  ]),
  packages: new Set(["-p", "--package"]),
  shell: new Set(["-c", "--call"]),
};
const BUNX_OPTIONS: OptionTable = {
  flags: new Set(["--bun", "--silent", "--verbose", "--no-install", "--prefer-offline"]),
  valued: new Set(["-p", "--package", "--registry", "--cwd"]),
  packages: new Set(["-p", "--package"]),
  shell: new Set(),
};
const PNPM_OPTIONS: OptionTable = {
  flags: new Set(["-s", "--silent", "-q", "--quiet"]),
  valued: new Set(["-p", "--package", "--registry", "--dir", "-C"]),
  packages: new Set(["-p", "--package"]),
  shell: new Set(["-c", "--shell-mode"]),
};
const NO_OPTIONS: OptionTable = {
  flags: new Set(),
  valued: new Set(),
  packages: new Set(),
  shell: new Set(),
};

function takesValue(word: string, options: OptionTable): boolean {
  return !word.includes("=") && options.valued.has(word);
}

/**
 * npm-style launchers: with `-p/--package` the packages are those options' values and the first word is a program
 * name; without, the first word is the package. Every package must be `name@<exact semver>` (or a local path).
 */
function checkNpmStyle(launcher: string, words: string[], options: OptionTable): string | null {
  const packages: string[] = [];
  let positional: string | undefined;
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    if (word === "--") {
      positional = words[index + 1];
      break;
    }
    if (!word.startsWith("-") || word === "-") {
      positional = word;
      break;
    }
    const [flag, inline] = word.includes("=")
      ? [word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)]
      : [word, undefined];
    if (options.shell.has(flag!))
      return `${launcher} ${flag} runs a shell string, whose packages can't be checked — name the package with an exact version instead, e.g. ${launcher} @modelcontextprotocol/server-filesystem@2025.8.21`;
    if (inline === undefined && !options.flags.has(flag!) && !options.valued.has(flag!))
      return unknownOption(launcher, flag!);
    const value = inline ?? (options.valued.has(flag!) ? words[++index] : undefined);
    if (options.packages.has(flag!) && value !== undefined) packages.push(value);
  }
  if (packages.length === 0) {
    if (positional === undefined)
      return `${launcher} is given no package to run — name one with an exact version, e.g. @modelcontextprotocol/server-filesystem@2025.8.21`;
    packages.push(positional);
  }
  for (const spec of packages) {
    const problem = npmSpecProblem(spec);
    if (problem)
      return `${launcher} would fetch "${spec}" ${problem} — pin an exact version, e.g. ${exampleOf(spec, "@", "2025.8.21")}`;
  }
  return null;
}

/** Exact semver (semver.org's grammar: no ranges, no `x`, no tags); a leading `v` is allowed as npm allows it. */
const EXACT_SEMVER =
  /^v?(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

function npmSpecProblem(spec: string): string | null {
  // A folder or tarball on this machine: nothing is fetched.
  if (/^(?:\.{1,2}\/|\/|file:)/.test(spec)) return null;
  // `@scope/name@1.2.3`: the version follows the last `@` that is not the scope's.
  const at = spec.lastIndexOf("@");
  if (at <= 0) return "without a version (whatever is newest at each start)";
  const version = spec.slice(at + 1);
  if (version.startsWith("npm:")) return npmSpecProblem(version.slice(4));
  if (/^(?:git|github|gitlab|bitbucket|https?):|#/.test(spec))
    return "from a git or web address, not a registry version";
  if (EXACT_SEMVER.test(version)) return null;
  return `at "${version}", a range or tag that moves`;
}

/**
 * `uvx`/`uv tool run`/`pipx run`: the package is the first word (`name@1.2.3` or `name==1.2.3`), or `--from`'s
 * value; `--with` adds packages. Each must name one version (`==` without a wildcard, or `@`).
 */
function checkUvx(launcher: string, words: string[]): string | null {
  const packages: string[] = [];
  let from: string | undefined;
  let positional: string | undefined;
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    if (word === "--") {
      positional = words[index + 1];
      break;
    }
    if (!word.startsWith("-")) {
      positional = word;
      break;
    }
    const [flag, inline] = word.includes("=")
      ? [word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)]
      : [word, undefined];
    if (flag === "--with-requirements" || flag === "--pip-args")
      return `${launcher} ${flag} names packages Magpie can't check — list each with --with name==1.2.3`;
    if (inline === undefined && UV_FLAGS.has(flag!)) continue;
    if (inline === undefined && !UV_VALUED.has(flag!)) return unknownOption(launcher, flag!);
    const value = inline ?? words[++index];
    if (value === undefined) break;
    if (flag === "--from" || flag === "--spec") from = value;
    else if (flag === "--with" || flag === "-w")
      packages.push(...value.split(",").map((part) => part.trim()));
  }
  const main = from ?? positional;
  if (main === undefined)
    return `${launcher} is given no package to run — name one with an exact version, e.g. mcp-server-fetch==2025.4.7`;
  for (const spec of [main, ...packages]) {
    const problem = pythonSpecProblem(spec);
    if (problem)
      return `${launcher} would fetch "${spec}" ${problem} — pin an exact version, e.g. ${exampleOf(spec, "==", "2025.4.7")}`;
  }
  return null;
}

/**
 * An option the check doesn't know may take the next word as its value (npm's parser does that for unknown
 * options), so the word after it can't be told from the package: refused rather than guessed.
 */
function unknownOption(launcher: string, flag: string): string {
  const example = /^(?:uv|pipx)/.test(launcher)
    ? "mcp-server-fetch==2025.4.7"
    : "@modelcontextprotocol/server-filesystem@2025.8.21";
  return `${launcher} option ${flag} is not one Magpie's version check knows, so it can't tell which word is the package — write it as ${flag}=<value>, or drop it, and name the package with an exact version, e.g. ${example}`;
}

const UV_FLAGS = new Set([
  "-q",
  "--quiet",
  "-v",
  "--verbose",
  "--isolated",
  "--offline",
  "--no-cache",
  "-n",
  "--native-tls",
  "--no-progress",
  "--no-config",
  "--refresh",
  "--upgrade",
  "-U",
  "--reinstall",
  "--no-build",
  "--no-sources",
  "--no-python-downloads",
  "--managed-python",
  "--no-managed-python",
  "--preview",
]);

const UV_VALUED = new Set([
  "--from",
  "--spec",
  "--with",
  "-w",
  "--with-editable",
  "--python",
  "-p",
  "--index",
  "--default-index",
  "--index-url",
  "-i",
  "--extra-index-url",
  "--find-links",
  "-f",
  "--cache-dir",
  "--directory",
  "--project",
  "--config-file",
  "--python-preference",
  "--index-strategy",
  "--keyring-provider",
  "--resolution",
  "--prerelease",
  "--exclude-newer",
  "--constraints",
  "-c",
  "--overrides",
]);

function pythonSpecProblem(spec: string): string | null {
  if (/^(?:\.{1,2}\/|\/|file:)/.test(spec)) return null;
  if (/^(?:git\+|https?:)/.test(spec) || spec.includes(" @ "))
    return "from a git or web address, not a registry version";
  // `name[extra]@1.2.3` (uv's shorthand) or `name[extra]==1.2.3`; one clause, no wildcard, no marker.
  const match = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,-]*\])?(@|===?)(.*)$/.exec(spec);
  if (!match)
    return /[<>~!=*]/.test(spec)
      ? "with a version range (a different release may install at each start)"
      : "without a version (whatever is newest at each start)";
  const version = match[2] ?? "";
  if (/^v?[0-9][0-9A-Za-z.+!-]*$/.test(version) && !version.includes("*")) return null;
  return `at "${version}", a range or tag that moves`;
}

/** The package name of a spec with a placeholder exact version, for the fix. */
function exampleOf(spec: string, separator: string, version: string): string {
  const at = spec.lastIndexOf("@");
  let name = at > 0 ? spec.slice(0, at) : spec;
  if (separator === "==") name = name.split(/[=<>!~@;\s]/)[0] ?? name;
  return name && !/^(?:\.{1,2}\/|\/|git|https?:)/.test(name)
    ? `${name}${separator}${version}`
    : `@modelcontextprotocol/server-filesystem@2025.8.21`;
}
