import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import markdownIt, { type Token } from "markdown-it";

/**
 * The user documentation as the doc tests read it: README.md and every page of docs/ (drafts excluded), parsed
 * with markdown-it, so a fence or a link is what a Markdown renderer sees, not what a line regex guesses.
 */

const markdown = markdownIt();

/** README.md first, then docs/README.md, then the other pages by name — the order commands run in. */
export function docPages(): string[] {
  const pages = readdirSync("docs")
    .filter((name) => name.endsWith(".md") && name !== "README.md")
    .sort()
    .map((name) => path.join("docs", name));
  return ["README.md", path.join("docs", "README.md"), ...pages];
}

const parsed = new Map<string, Token[]>();

function tokensOf(page: string): Token[] {
  let tokens = parsed.get(page);
  if (!tokens) {
    tokens = markdown.parse(readFileSync(page, "utf8"), {});
    parsed.set(page, tokens);
  }
  return tokens;
}

/** Fences whose commands the doc test runs: ```sh, ```bash, ```text or a bare ```. */
const COMMAND_FENCES = new Set(["sh", "bash", "text", ""]);

export interface DocCommand {
  page: string;
  /** 1-based line in the page. */
  line: number;
  /** The command as a shell runs it: the line without its `$ ` prompt and without its trailing comment. */
  command: string;
  /** The trailing `# …` comment, without the `#`. */
  comment: string;
  /** The exit status the page implies: 0, or N when the comment ends with `→ exit N`. */
  expectedStatus: number;
}

/** Every `magpie …` / `$ magpie …` line of the page's command fences. */
export function docCommands(page: string): DocCommand[] {
  const commands: DocCommand[] = [];
  for (const token of tokensOf(page)) {
    if (token.type !== "fence" || !COMMAND_FENCES.has(token.info.trim()) || !token.map) continue;
    token.content.split("\n").forEach((raw, index) => {
      const text = raw.trimStart().replace(/^\$ /, "");
      if (!text.startsWith("magpie ") && text !== "magpie") return;
      const { command, comment } = splitComment(text);
      const status = /→ exit (\d+)\s*$/.exec(comment);
      commands.push({
        page,
        line: token.map![0] + 2 + index,
        command,
        comment,
        expectedStatus: status ? Number(status[1]) : 0,
      });
    });
  }
  return commands;
}

/**
 * Splits a shell line at its comment: a `#` outside quotes that starts a word. (A shell parser for one line of our
 * own docs would be a dependency for ten lines; `$(…)` and quotes are left to `sh`, which runs the line.)
 */
export function splitComment(line: string): { command: string; comment: string } {
  let quote: string | null = null;
  for (let index = 0; index < line.length; index++) {
    const char = line[index]!;
    if (quote) {
      if (char === quote) quote = null;
      else if (char === "\\" && quote === '"') index++;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === "\\") index++;
    else if (char === "#" && (index === 0 || /\s/.test(line[index - 1]!))) {
      return { command: line.slice(0, index).trimEnd(), comment: line.slice(index + 1).trim() };
    }
  }
  return { command: line.trimEnd(), comment: "" };
}

/**
 * `$ magpie …` lines of ```console fences: transcripts of one particular situation (an invalid file, a changed key)
 * that the test can't recreate, so they are not run — but each sub-command they show must also appear in a block
 * that is.
 */
export function consoleTranscripts(page: string): Array<{ page: string; line: number; command: string }> {
  const transcripts: Array<{ page: string; line: number; command: string }> = [];
  for (const token of tokensOf(page)) {
    if (token.type !== "fence" || token.info.trim() !== "console" || !token.map) continue;
    token.content.split("\n").forEach((raw, index) => {
      if (raw.startsWith("$ magpie")) {
        transcripts.push({
          page,
          line: token.map![0] + 2 + index,
          command: splitComment(raw.slice(2)).command,
        });
      }
    });
  }
  return transcripts;
}

export interface DocLink {
  page: string;
  /** 1-based line of the paragraph, table or list item holding the link. */
  line: number;
  target: string;
}

/** Every link and image target in the page (inline, tables and lists included). */
export function docLinks(page: string): DocLink[] {
  const links: DocLink[] = [];
  for (const token of tokensOf(page)) {
    if (token.type !== "inline") continue;
    for (const child of token.children ?? []) {
      const target =
        child.type === "link_open"
          ? child.attrGet("href")
          : child.type === "image"
            ? child.attrGet("src")
            : null;
      if (target) links.push({ page, line: (token.map?.[0] ?? 0) + 1, target: String(target) });
    }
  }
  return links;
}

/** The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
export function headingAnchors(page: string): Set<string> {
  const anchors = new Set<string>();
  const tokens = tokensOf(page);
  tokens.forEach((token, index) => {
    if (token.type !== "heading_open") return;
    const text = (tokens[index + 1]?.children ?? [])
      .filter((child) => child.type === "text" || child.type === "code_inline")
      .map((child) => child.content)
      .join("");
    const base = text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    let anchor = base;
    for (let repeat = 1; anchors.has(anchor); repeat++) anchor = `${base}-${repeat}`;
    anchors.add(anchor);
  });
  return anchors;
}
