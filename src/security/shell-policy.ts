import fs from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type { Parser, Node as SyntaxNode } from "web-tree-sitter";
import { type Re2Pattern, re2Pattern } from "../lib/re2-pattern.js";
import { GuardRefusal } from "./guard-refusal.js";
import { sanitizedEnv } from "./shell-env.js";

export interface ShellPolicy {
  allowCommands?: string[];
  denyPatterns: string[];
  /** The PATH the command will run with (default: the sanitized child environment's). */
  searchPath?: string;
}

/** Compiled deny patterns, by source: the config holds few, and a reload keeps most of them. */
const compiledDenyPatterns = new Map<string, Re2Pattern | string>();

function denyPattern(source: string): Re2Pattern | string {
  let compiled = compiledDenyPatterns.get(source);
  if (compiled === undefined) {
    compiled = re2Pattern(source);
    if (compiledDenyPatterns.size >= 256) compiledDenyPatterns.clear();
    compiledDenyPatterns.set(source, compiled);
  }
  return compiled;
}

/**
 * Applies `tools.shell.denyPatterns` (regular expressions on the whole command, run by RE2 in time linear in the
 * command: the command is the model's text, and a backtracking regex could be made to stall on it) and `tools.shell.allowCommands`
 * (every program the parsed command would run must be listed; what can't be proven is refused). Throws
 * `shell.denied` with the reason.
 */
export async function checkShellPolicy(command: string, policy: ShellPolicy): Promise<void> {
  for (const pattern of policy.denyPatterns) {
    const compiled = denyPattern(pattern);
    // The config check refuses such a pattern; a policy built elsewhere fails closed.
    if (typeof compiled === "string")
      throw new GuardRefusal(
        "shell.denied",
        `tools.shell.denyPatterns has an unusable pattern /${pattern}/: ${compiled}`,
      );
    if (compiled.test(command)) {
      throw new GuardRefusal(
        "shell.denied",
        `The command matches the deny pattern /${pattern}/ (tools.shell.denyPatterns). Use a different approach or ask the owner to change the policy.`,
      );
    }
  }
  if (!policy.allowCommands) return;
  const allowed = new Set(policy.allowCommands);
  const searchPath = policy.searchPath ?? sanitizedEnv().PATH ?? "";
  const { programs, problems } = await programsIn(command);
  const relativeEntry = searchPath.split(":").find((entry) => !path.isAbsolute(entry));
  if (relativeEntry !== undefined)
    problems.push(
      `PATH holds the relative entry '${relativeEntry}', so a bare name could run a workspace file`,
    );
  const unlisted = new Set<string>();
  for (const program of programs) {
    const name = await listedName(program, searchPath, problems);
    if (name !== undefined && !allowed.has(name)) unlisted.add(name);
  }
  if (unlisted.size > 0) problems.unshift(`'${[...unlisted].join("', '")}' not listed`);
  if (programs.length === 0 && problems.length === 0) problems.push("it runs no listed program");
  if (problems.length > 0) {
    throw new GuardRefusal(
      "shell.denied",
      `Refused by tools.shell.allowCommands (allowed: ${policy.allowCommands.join(", ")}): ${problems.join("; ")}. Use only the listed programs, with literal names and no eval/source.`,
    );
  }
}

/** Every program a command line would start, as written, and why anything else in it can't be proven. */
export async function programsIn(command: string): Promise<{ programs: string[]; problems: string[] }> {
  const walk = new ProgramWalk();
  // tree-sitter-bash keeps `tou\<newline>ch` as two words where sh joins them into one.
  if (/\\\r?\n/.test(command)) walk.problems.push("a line continuation (backslash-newline)");
  const parser = await bashParser();
  const tree = parser.parse(command);
  if (!tree) return { programs: [], problems: ["the shell parser returned nothing"] };
  try {
    if (tree.rootNode.hasError)
      walk.problems.push(`a syntax the parser can't read (${describeError(tree.rootNode)})`);
    else walk.visit(tree.rootNode);
  } finally {
    tree.delete();
  }
  return { programs: walk.programs, problems: walk.problems };
}

/*
 * The parser: tree-sitter-bash through web-tree-sitter (WASM, no native build), both kept by the tree-sitter
 * project and released in 2025. sh-syntax (mvdan/sh as WASM) was the first choice but its JSON tree keeps only
 * positions for commands and word parts (`Cmd: {}`), so no walk can see what runs; the mvdan-sh and bash-parser
 * packages are unmaintained; shell-quote only tokenizes. tree-sitter is error-tolerant, so any ERROR/MISSING node
 * is refused, and the few places where it reads differently from sh (backslash-newline, backticks in here-docs)
 * are refused by the lexical checks below.
 */
let parserLoading: Promise<Parser> | undefined;
function bashParser(): Promise<Parser> {
  parserLoading ??= (async () => {
    const { Parser, Language } = await import("web-tree-sitter");
    await Parser.init();
    const grammarFile = createRequire(import.meta.url).resolve("tree-sitter-bash/tree-sitter-bash.wasm");
    const parser = new Parser();
    parser.setLanguage(await Language.load(grammarFile));
    return parser;
  })().catch((error: unknown) => {
    parserLoading = undefined;
    throw new GuardRefusal(
      "shell.denied",
      `tools.shell.allowCommands is set but the shell parser could not be loaded (${String(error)}); nothing runs. Reinstall with npm ci.`,
    );
  });
  return parserLoading;
}

function describeError(node: SyntaxNode): string {
  const bad = node.descendantsOfType(["ERROR"])[0];
  if (bad) return `near '${bad.text.slice(0, 40)}'`;
  return "an incomplete command";
}

/** Variables that decide which program a name runs, or inject code into it. */
const PROTECTED_VARIABLE =
  /^(PATH|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|LD_\w*|DYLD_\w*|BASH_FUNC_\w*)$/;
/** Builtins that set a variable named by an argument (`read PATH`, `unset PATH`). */
const SETS_VARIABLES = new Set(["read", "getopts", "printf", "mapfile", "readarray", "let", "unset", "hash"]);
/** Programs whose argument is shell code or a later command's meaning: refused even if listed. */
const RUNS_CODE = new Set(["eval", "source", ".", "alias", "trap", "fc", "bind", "enable", "coproc"]);

interface WrapperSpec {
  flags?: string[];
  withValue?: string[];
  /** `NAME=value` arguments set the wrapped program's environment. */
  assignments?: boolean;
  /** `nice -5`. */
  numericFlag?: boolean;
  /** Arguments before the program (timeout's duration). */
  operands?: number;
  /** What runs with no program given (xargs runs echo). */
  defaultProgram?: string;
  /** Options that make the wrapper run nothing (`command -v`). */
  runsNothing?: string[];
}

/** Programs that run the program named by their arguments; what they run is checked too. */
const WRAPPERS: Record<string, WrapperSpec> = {
  env: {
    flags: ["-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"],
    withValue: ["-u", "--unset", "-C", "--chdir"],
    assignments: true,
  },
  command: { flags: ["-p"], runsNothing: ["-v", "-V"] },
  exec: { flags: ["-c", "-l"], withValue: ["-a"] },
  builtin: {},
  busybox: {},
  nohup: {},
  nice: { withValue: ["-n", "--adjustment"], numericFlag: true },
  timeout: {
    flags: ["--preserve-status", "--foreground", "-v", "--verbose"],
    withValue: ["-s", "--signal", "-k", "--kill-after"],
    operands: 1,
  },
  xargs: {
    flags: [
      "-0",
      "--null",
      "-r",
      "--no-run-if-empty",
      "-t",
      "--verbose",
      "-p",
      "--interactive",
      "-x",
      "--exit",
    ],
    withValue: ["-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n", "--max-args"],
    defaultProgram: "echo",
  },
  sudo: {
    flags: [
      "-n",
      "--non-interactive",
      "-E",
      "--preserve-env",
      "-H",
      "--set-home",
      "-k",
      "-P",
      "-S",
      "--stdin",
    ],
    withValue: ["-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-p", "--prompt"],
    assignments: true,
  },
  doas: { flags: ["-n"], withValue: ["-u"] },
  stdbuf: { withValue: ["-i", "-o", "-e", "--input", "--output", "--error"] },
  setsid: { flags: ["-c", "--ctty", "-f", "--fork", "-w", "--wait"] },
  time: {
    flags: ["-p", "-v", "--verbose", "-a", "--append", "-q", "--quiet"],
    withValue: ["-o", "--output", "-f"],
  },
  ionice: { flags: ["-t", "--ignore"], withValue: ["-c", "--class", "-n", "--classdata"] },
};

/** Node types that only hold other nodes; their children are checked. */
const CONTAINERS = new Set([
  "program",
  "list",
  "pipeline",
  "negated_command",
  "subshell",
  "compound_statement",
  "redirected_statement",
  "do_group",
  "if_statement",
  "elif_clause",
  "else_clause",
  "while_statement",
  "case_statement",
  "case_item",
  "file_redirect",
  "heredoc_redirect",
  "herestring_redirect",
  "string",
  "concatenation",
  "array",
  "command_substitution",
  "process_substitution",
  "variable_assignments",
  "brace_expression",
  "simple_expansion",
  "binary_expression",
  "unary_expression",
  "parenthesized_expression",
]);

/** Leaves that sh reads literally. */
const LITERAL_LEAVES = new Set([
  "raw_string",
  "ansi_c_string",
  "comment",
  "number",
  "variable_name",
  "special_variable_name",
  "file_descriptor",
  "heredoc_start",
  "heredoc_end",
  "test_operator",
  "regex",
  "extglob_pattern",
]);

const SAFE_NAME = /^(\/?([\w.+@%:,-]+\/)*[\w.+@%:,-]+|\[)$/;

class ProgramWalk {
  readonly programs: string[] = [];
  readonly problems: string[] = [];

  visit(node: SyntaxNode): void {
    if (!node.isNamed) return;
    switch (node.type) {
      case "command":
        this.command(node);
        break;
      case "declaration_command":
      case "unset_command":
        this.declaration(node);
        break;
      case "test_command":
        this.programs.push(node.child(0)?.text ?? "[");
        this.visitChildren(node);
        break;
      case "variable_assignment":
        this.assignment(node);
        break;
      case "for_statement": {
        const variable = node.childForFieldName("variable");
        if (variable) this.protect(variable.text, node.child(0)?.text ?? "for");
        this.visitChildren(node);
        break;
      }
      case "function_definition": {
        const body = node.childForFieldName("body");
        if (body) this.visit(body);
        break;
      }
      case "arithmetic_expansion":
        this.arithmetic(node);
        break;
      case "expansion":
        this.expansion(node);
        break;
      case "heredoc_body":
        this.heredocBody(node);
        break;
      case "word":
        this.lexical(node, /[`;&|<>()\n]|\$\(/);
        break;
      case "string_content":
      case "heredoc_content":
        this.lexical(node, /`|\$\(/);
        break;
      case "command_name":
        this.visitChildren(node);
        break;
      default:
        if (CONTAINERS.has(node.type)) this.visitChildren(node);
        else if (!LITERAL_LEAVES.has(node.type))
          this.problems.push(`'${snippet(node)}' (${node.type.replaceAll("_", " ")}) can't be checked`);
    }
  }

  private visitChildren(node: SyntaxNode): void {
    for (const child of node.namedChildren) this.visit(child);
  }

  private command(node: SyntaxNode): void {
    this.visitChildren(node);
    const name = node.childForFieldName("name");
    if (!name) return; // Only assignments and redirections: nothing runs.
    this.program(
      staticWord(name.namedChildren[0] ?? name),
      snippet(name),
      node.childrenForFieldName("argument"),
    );
  }

  /** Records `name` (the program as written) and, for a wrapper, what it runs. */
  private program(name: string | undefined, written: string, args: SyntaxNode[]): void {
    if (name === undefined || !SAFE_NAME.test(name)) {
      this.problems.push(`the program '${written}' is only known when the command runs`);
      return;
    }
    const base = path.basename(name);
    if (RUNS_CODE.has(base)) {
      this.problems.push(`'${base}' runs a string as shell code, which can't be checked`);
      return;
    }
    this.programs.push(name);
    if (SETS_VARIABLES.has(base))
      for (const arg of args) {
        const value = staticWord(arg);
        if (value !== undefined) this.protect(value.replace(/^-\w*/, ""), base);
      }
    const spec = WRAPPERS[base];
    if (spec) this.wrapped(base, spec, args);
  }

  private wrapped(wrapper: string, spec: WrapperSpec, args: SyntaxNode[]): void {
    let index = 0;
    const cannotTell = (why: string): void => {
      this.problems.push(`can't tell what '${wrapper}' runs (${why})`);
    };
    while (index < args.length) {
      const arg = args[index] as SyntaxNode;
      const value = staticWord(arg);
      if (value === undefined) {
        cannotTell(`'${snippet(arg)}' is only known when the command runs`);
        return;
      }
      if (value === "--") {
        index += 1;
        break;
      }
      if (spec.assignments && /^[A-Za-z_]\w*=/.test(value)) {
        this.protect(value.slice(0, value.indexOf("=")), wrapper);
        index += 1;
        continue;
      }
      if (!value.startsWith("-")) break;
      if (spec.runsNothing?.includes(value)) return;
      const optionName = value.startsWith("--") ? (value.split("=")[0] ?? value) : value;
      if (spec.flags?.includes(value) || (spec.numericFlag && /^-\d+$/.test(value))) index += 1;
      else if (spec.withValue?.includes(optionName)) index += optionName === value ? 2 : 1;
      else if (spec.withValue?.some((option) => !option.startsWith("--") && value.startsWith(option)))
        index += 1;
      else {
        cannotTell(`unknown option '${value}'`);
        return;
      }
    }
    index += spec.operands ?? 0;
    const target = args[index];
    if (!target) {
      if (spec.defaultProgram) this.program(spec.defaultProgram, spec.defaultProgram, []);
      else if (index > args.length) cannotTell("an argument is missing");
      return;
    }
    this.program(staticWord(target), snippet(target), args.slice(index + 1));
  }

  private declaration(node: SyntaxNode): void {
    const keyword = node.child(0)?.text ?? node.type;
    this.programs.push(keyword);
    for (const child of node.namedChildren) {
      if (child.type === "variable_name" || child.type === "word") this.protect(child.text, keyword);
      this.visit(child);
    }
  }

  private assignment(node: SyntaxNode): void {
    const name = node.childForFieldName("name");
    if (name?.type !== "variable_name") {
      this.problems.push(`the assignment '${snippet(node)}' (array element) can't be checked`);
      return;
    }
    this.protect(name.text, "an assignment");
    this.visitChildren(node);
  }

  private protect(variable: string, by: string): void {
    if (PROTECTED_VARIABLE.test(variable))
      this.problems.push(`${by} sets ${variable}, which decides what a program name runs`);
  }

  /** In bash a variable's value inside arithmetic is evaluated again, and `a[$(cmd)]` there runs cmd. */
  private arithmetic(node: SyntaxNode): void {
    for (const part of node.descendantsOfType([
      "variable_name",
      "simple_expansion",
      "expansion",
      "command_substitution",
      "word",
    ])) {
      this.problems.push(
        `the arithmetic '${snippet(node)}' uses '${part.text}', which bash can evaluate as code`,
      );
      return;
    }
  }

  private expansion(node: SyntaxNode): void {
    const operators = node.children.filter((child) => !child.isNamed).map((child) => child.type);
    if (
      node.text.startsWith("${!") ||
      operators.includes(":") ||
      node.descendantsOfType("subscript").length
    ) {
      this.problems.push(`the expansion '${snippet(node)}' (indirection, index or slice) can't be checked`);
      return;
    }
    this.visitChildren(node);
  }

  private heredocBody(node: SyntaxNode): void {
    const start = node.parent?.children.find((child) => child.type === "heredoc_start")?.text ?? "";
    if (/['"\\]/.test(start)) return; // Quoted delimiter: the body is literal.
    if (node.namedChildCount === 0) this.lexical(node, /`|\$\(/);
    else this.visitChildren(node);
  }

  /** Where tree-sitter saw plain text but sh would still substitute or split. */
  private lexical(node: SyntaxNode, pattern: RegExp): void {
    if (pattern.test(node.text.replace(/\\[^\n]/g, "")))
      this.problems.push(
        `'${snippet(node)}' holds a substitution or operator the parser did not read as one`,
      );
  }
}

/** The literal value of a word, or undefined when it depends on expansion, globbing or brace expansion. */
function staticWord(node: SyntaxNode): string | undefined {
  switch (node.type) {
    case "word": {
      const text = node.text;
      if (text === "[") return text;
      if (/[\\*?[\]~$`'"]/.test(text) || hasBraceExpansion(text)) return undefined;
      return text;
    }
    case "number":
      return node.text;
    case "raw_string":
      return node.text.slice(1, -1);
    case "string": {
      const parts = node.namedChildren;
      if (!parts.every((part) => part.type === "string_content" && !/[\\`$]/.test(part.text)))
        return undefined;
      return parts.map((part) => part.text).join("");
    }
    case "concatenation": {
      const parts = node.namedChildren.map(staticWord);
      return parts.every((part) => part !== undefined) ? parts.join("") : undefined;
    }
    default:
      return undefined;
  }
}

function snippet(node: SyntaxNode): string {
  return node.text.length > 60 ? `${node.text.slice(0, 57)}...` : node.text;
}

/**
 * The name a program counts as in allowCommands: a bare name as is; an absolute path as its basename only when
 * it is the very file that name finds on PATH (`/usr/bin/ls` is `ls`, `/tmp/ls` is not); a relative path never.
 */
async function listedName(
  program: string,
  searchPath: string,
  problems: string[],
): Promise<string | undefined> {
  if (!program.includes("/")) return program;
  if (!program.startsWith("/")) {
    problems.push(`'${program}' is a path relative to the working directory, not a listed program`);
    return undefined;
  }
  const base = path.basename(program);
  const [onPath, real] = await Promise.all([
    findOnPath(base, searchPath),
    fs.realpath(program).catch(() => null),
  ]);
  if (onPath && real && onPath === real) return base;
  problems.push(`'${program}' is not the '${base}' found on PATH`);
  return undefined;
}

async function findOnPath(name: string, searchPath: string): Promise<string | undefined> {
  for (const directory of searchPath.split(":")) {
    if (!path.isAbsolute(directory)) continue;
    const candidate = path.join(directory, name);
    try {
      await fs.access(candidate, fs.constants.X_OK);
      if ((await fs.stat(candidate)).isFile()) return await fs.realpath(candidate);
    } catch {
      // Not here; keep looking.
    }
  }
  return undefined;
}

/**
 * True when a word holds `{…,…}` or `{…..…}` (a `{`, then `,` or `..`, before the next `}`). In code: the regex
 * `\{[^}]*(,|\.\.)[^}]*\}` is cubic on a long word of braces and commas.
 */
function hasBraceExpansion(word: string): boolean {
  let open = word.indexOf("{");
  for (let close = word.indexOf("}", open); open >= 0 && close >= 0; close = word.indexOf("}", open)) {
    if (open < close) {
      const inside = word.slice(open + 1, close);
      if (inside.includes(",") || inside.includes("..")) return true;
    }
    // The first `{` after this `}` starts the next candidate.
    open = word.indexOf("{", close + 1);
  }
  return false;
}
