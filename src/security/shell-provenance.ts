import fs from "node:fs";
import path from "node:path";
import type { MagpieConfig } from "../config/schema.js";
import type { TurnProvenance, UntrustedSource } from "../core/turn-provenance.js";
import { isMagpieState } from "./magpie-state.js";
import { type PathScope, resolveToolPath, scopeOf } from "./path-resolver.js";
import { isWithin } from "./paths.js";
import type { ProvenanceStore } from "./provenance-store.js";
import { sourceLabel } from "./untrusted.js";
import { fileKey } from "./writes-in-flight.js";

/**
 * What a `shell` command brings into a turn (DESIGN.md → Security → "Untrusted content"): its output is whatever
 * the programs it runs read, so a `cat` of a downloaded file or a `curl` is the same content `file_read` or
 * `http_request` would bring, through another door. Judged from the command's words **before** it runs (a file the
 * command itself writes and then reads is its own output, not outside content):
 *
 * - a network program (`curl`, `wget`, `ssh`, `git clone`/`pull`/`fetch` …) → a web source;
 * - a word that names an existing regular file (from the command's cwd, or from a directory the command names, as
 *   in `cd downloads && cat r.txt`) → judged like `file_read`: untrusted unless Magpie wrote it in an owner's
 *   untainted turn (unchanged since) or it lies under `security.trustedPaths`;
 * - a directory or a glob given to a program that reads content (`cat *`, `grep -r x downloads`) → "files under";
 * - more words than are checked → untrusted (the safe side).
 *
 * Magpie's own state (config, `.env`, data folder) is refused by the file guard and hidden from the sandboxed shell:
 * not judged here. After the command, the files it named that it created or changed are recorded with the
 * turn's sources plus the command's own (so `curl -o page.html …` leaves a file that taints whoever reads it, and
 * `echo done > made.txt` in an owner's untainted turn leaves one that doesn't).
 *
 * The model of an untainted turn has read nothing hostile yet, so what this catches is the innocent read; a tainted
 * turn's command is a sink already (it asks the owner, or is refused) however it spells its reads.
 */

/** Programs whose output is what a remote end sent. */
const NETWORK = new Set([
  "curl",
  "wget",
  "aria2c",
  "http",
  "https",
  "xh",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "telnet",
  "ssh",
  "scp",
  "sftp",
  "rsync",
  "ftp",
  "lftp",
  "lynx",
  "w3m",
  "links",
  "elinks",
  "dig",
  "nslookup",
  "host",
  "whois",
  "gh",
  "mosquitto_sub",
  "openssl",
]);
/** `git` subcommands that bring in what a remote holds. */
const GIT_NETWORK = new Set(["clone", "pull", "fetch", "ls-remote", "submodule", "archive"]);
/** Programs that put the content of files they are given (or find under a directory or glob) on their output. */
const READERS = new Set([
  "cat",
  "tac",
  "head",
  "tail",
  "less",
  "more",
  "nl",
  "grep",
  "egrep",
  "fgrep",
  "zgrep",
  "rg",
  "ag",
  "ack",
  "awk",
  "gawk",
  "mawk",
  "sed",
  "cut",
  "sort",
  "uniq",
  "paste",
  "join",
  "comm",
  "fold",
  "fmt",
  "column",
  "xxd",
  "od",
  "hexdump",
  "strings",
  "base64",
  "base32",
  "diff",
  "cmp",
  "jq",
  "yq",
  "tar",
  "unzip",
  "zcat",
  "gzip",
  "gunzip",
  "bzcat",
  "xzcat",
  "zstdcat",
  "python",
  "python3",
  "node",
  "perl",
  "ruby",
  "php",
  "bash",
  "sh",
  "dash",
  "zsh",
  "source",
  "xargs",
  "sqlite3",
  "iconv",
  "tee",
]);
/** Programs that look at names, sizes and the system, not at what a file holds. */
const METADATA = new Set([
  "ls",
  "stat",
  "file",
  "du",
  "df",
  "wc",
  "touch",
  "mkdir",
  "rmdir",
  "rm",
  "mv",
  "cp",
  "ln",
  "chmod",
  "chown",
  "echo",
  "printf",
  "date",
  "pwd",
  "cd",
  "test",
  "[",
  "true",
  "false",
  "sleep",
  "which",
  "whoami",
  "id",
  "uname",
  "uptime",
  "free",
  "ps",
  "basename",
  "dirname",
  "realpath",
  "readlink",
  "md5sum",
  "sha1sum",
  "sha256sum",
  "sha512sum",
  "git",
  "tree",
  // Names only; `find … -exec cat {} +` names its reader.
  "find",
  "export",
  "exit",
]);
/** At most this many words (counted per simple command) are looked up; a command with more is untrusted as a whole. */
const MAX_WORDS = 1_024;
/** Directories named in the command that relative words are also tried from (`cd x && cat y`). */
const MAX_BASES = 8;
const MAX_WORD_CHARS = 4_096;
// One character class with `+` each: linear on any input.
const SEGMENT_BREAK = /[;|&\n]+/;
const WORD_BREAK = /[\s<>()`'"={},$]+/;

/** A file's identity and version before the command ran (to see what the command created or changed). */
interface Seen {
  exists: boolean;
  mtimeMs: number;
  size: number;
  ino: number;
}

export interface ShellReads {
  /** What the command's output brings into the turn. */
  sources: UntrustedSource[];
  /** The regular files the command names (real paths) or may create (as named), as they were before it ran. */
  before: Map<string, Seen>;
}

/** Judges a `shell` call's command before it runs: what its output will bring in, and which files it names. */
export async function shellReads(
  input: Record<string, unknown>,
  config: MagpieConfig,
  store: ProvenanceStore,
  homeDir?: string,
): Promise<ShellReads> {
  const command = typeof input.command === "string" ? input.command : "";
  const scope = scopeOf(config, homeDir);
  const shown = commandLabel(command);
  const sources: UntrustedSource[] = [];
  const before = new Map<string, Seen>();
  const add = (source: UntrustedSource) => {
    const label = sourceLabel(source.label);
    if (!sources.some((known) => known.label === label)) sources.push({ kind: source.kind, label });
  };
  const text = command.replace(/\$\{?HOME\}?/g, scope.home);
  // Each simple command of the line (`a; b && c | d`) with its words; options are not paths.
  const seen = new Set<string>();
  const segments: string[][] = [];
  let checks = 0;
  for (const segment of text.split(SEGMENT_BREAK)) {
    const words = [
      ...new Set(segment.split(WORD_BREAK).filter((word) => word !== "" && !word.startsWith("-"))),
    ];
    const key = words.join("\0");
    if (words.length === 0 || seen.has(key)) continue;
    seen.add(key);
    segments.push(words);
    checks += words.length;
    if (checks > MAX_WORDS) break;
  }
  const words = new Set(segments.flat());
  if (checks > MAX_WORDS) {
    add({ kind: "file", label: `the output of shell (more than ${MAX_WORDS} words to check): ${shown}` });
    return { sources, before };
  }
  const programs = new Set([...words].map((word) => path.basename(word)));
  const network = [...programs].find((program) => NETWORK.has(program));
  const gitNetwork = programs.has("git") && [...words].some((word) => GIT_NETWORK.has(word));
  if (network || gitNetwork)
    add({ kind: "web", label: `what ${network ?? "git"} brought in through shell: ${shown}` });

  const cwd = path.resolve(scope.workspace, typeof input.cwd === "string" ? input.cwd : ".");
  const absolute = (word: string, base: string) =>
    path.resolve(base, word.startsWith("~/") || word === "~" ? path.join(scope.home, word.slice(1)) : word);
  // Directories the command names: `cd x && cat y` reads x/y.
  const bases = [cwd];
  for (const word of words) {
    if (bases.length > MAX_BASES || word.length > MAX_WORD_CHARS || hasGlob(word)) continue;
    const dir = absolute(word, cwd);
    if (dir !== cwd && statOf(dir)?.isDirectory()) bases.push(dir);
  }
  for (const segment of segments) {
    // A simple command that only looks at names and sizes (`ls -la .`, `echo x > f`, `df -h`) reads no content;
    // any other (a reader, a script, an unknown program) reads what it names.
    const reads =
      !METADATA.has(path.basename(segment[0]!)) || segment.some((word) => READERS.has(path.basename(word)));
    // `… | xargs cat`: the names come from the input, the folder is the cwd.
    if (reads && segment.some((word) => path.basename(word) === "xargs") && !trusted(cwd, config, scope))
      add({ kind: "file", label: "files named on xargs' input (read by shell)" });
    for (const word of segment) {
      if (word.length > MAX_WORD_CHARS || word.includes("\0")) continue;
      const tries = path.isAbsolute(word) || word.startsWith("~") ? [cwd] : bases;
      for (const base of tries) {
        const lexical = absolute(word, base);
        if (hasGlob(word)) {
          // A glob's folder decides (`downloads/*.txt` → downloads).
          if (!reads || base !== cwd) continue;
          const folder = lexical.slice(0, lexical.search(/[*?[]/));
          if (!trusted(folder.endsWith("/") ? folder : path.dirname(folder), config, scope))
            add({ kind: "file", label: `files matching ${word} (read by shell)` });
          continue;
        }
        const stats = statOf(lexical);
        if (!stats) {
          // A file the command may create: remembered so its provenance is recorded after it ran.
          if (base === cwd && /[./]/.test(word) && fs.existsSync(path.dirname(lexical)))
            before.set(lexical, { exists: false, mtimeMs: 0, size: 0, ino: 0 });
          continue;
        }
        const judged = await judged_(lexical, scope);
        if (!judged) continue;
        if (stats.isFile())
          before.set(judged, { exists: true, mtimeMs: stats.mtimeMs, size: stats.size, ino: stats.ino });
        if (!reads || trusted(judged, config, scope)) continue;
        if (stats.isDirectory()) {
          add({ kind: "file", label: `files under ${word} (read by shell)` });
          continue;
        }
        if (!stats.isFile()) continue;
        const origin = store.fileOrigin(judged);
        if (origin.trusted) continue;
        const first = origin.sources[0];
        add({
          kind: "file",
          label: `file ${word} (read by shell; ${first ? `written after reading ${first.label}` : "not written by Magpie in an owner's turn"})`,
        });
      }
    }
  }
  return { sources, before };
}

/**
 * After the command: the files it named that it created or changed are its output, recorded with the turn's
 * sources (which by now hold the command's own).
 */
export function recordShellWrites(
  reads: ShellReads,
  provenance: TurnProvenance,
  store: ProvenanceStore,
): void {
  for (const [file, seen] of reads.before) {
    const real = seen.exists ? file : realOrSelf(file);
    const now = statOf(real);
    if (!now?.isFile()) continue;
    const changed =
      !seen.exists || now.mtimeMs !== seen.mtimeMs || now.size !== seen.size || now.ino !== seen.ino;
    if (changed) store.recordFile(real, store.inFlight.sourcesOf(fileKey(file), provenance));
  }
}

/**
 * The real path of an existing path, or null for Magpie's own state (its config, `.env`, data folder, install
 * folder): the file guard refuses those to every tool and the sandbox hides them from the shell.
 */
async function judged_(lexical: string, scope: PathScope): Promise<string | null> {
  try {
    const resolved = await resolveToolPath(lexical, scope);
    if (isMagpieState(resolved.real, scope.state) || isMagpieState(resolved.lexical, scope.state))
      return null;
    return resolved.real;
  } catch {
    return null;
  }
}

function trusted(real: string, config: MagpieConfig, scope: PathScope): boolean {
  const target = realOrSelf(real);
  return config.security.trustedPaths.some((entry) =>
    isWithin(
      target,
      realOrSelf(
        path.resolve(scope.workspace, entry.startsWith("~/") ? path.join(scope.home, entry.slice(2)) : entry),
      ),
    ),
  );
}

/** A glob: `*`, `?`, or a `[` closed by a later `]` (an unclosed `[` — the `[ -e f ]` test — is taken literally). */
function hasGlob(word: string): boolean {
  if (word.includes("*") || word.includes("?")) return true;
  const open = word.indexOf("[");
  return open >= 0 && word.indexOf("]", open + 1) > open;
}

function statOf(file: string): fs.Stats | undefined {
  try {
    return fs.statSync(file);
  } catch {
    return undefined;
  }
}

function realOrSelf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** The command as a label shows it: at most 80 characters (`sourceLabel` makes it one line). */
function commandLabel(command: string): string {
  return command.length > 80 ? `${command.slice(0, 79)}…` : command;
}
