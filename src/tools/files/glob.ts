import { re2Pattern } from "../../lib/re2-pattern.js";

/** Longer globs are refused (a glob's RE2 translation is up to five times as long). */
export const MAX_GLOB_CHARS = 200;

/** Whether a workspace-relative path (forward slashes) matches. */
export type GlobMatcher = (relativePath: string) => boolean;

/**
 * Compiles a model's glob to RE2, or says why it can't. `*` is any run within one path segment, `?` one
 * character of a segment, `**` as a whole segment any number of segments (`a/**` matches `a` too), `[abc]`,
 * `[a-z]` and `[!abc]`/`[^abc]` one character, `{a,b}` either alternative (nested, may hold wildcards), a
 * leading `!` negates, `\` escapes; dotfiles match like other files. With `basename`, the glob is matched
 * against the path's last segment.
 *
 * Hand-written rather than picomatch's matcher: picomatch compiles globs to backtracking JavaScript regexes
 * (with lookaheads RE2 can't run), and `*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*x` took 20 s on a 31-character name.
 */
export function globMatcher(glob: string, options: { basename?: boolean } = {}): GlobMatcher | string {
  if (glob.length > MAX_GLOB_CHARS)
    return `the glob is ${glob.length} characters; at most ${MAX_GLOB_CHARS} are allowed`;
  let body = glob.startsWith("./") ? glob.slice(2) : glob;
  const negated = body.startsWith("!") && !body.startsWith("!(");
  if (negated) body = body.slice(1);
  const source = globToRe2(body);
  if (typeof source !== "string") return source.problem;
  const compiled = re2Pattern(`(?s)^(?:${source})$`, { maxChars: MAX_GLOB_CHARS * 6 });
  if (typeof compiled === "string") return compiled;
  return (relativePath) => {
    const subject = options.basename ? relativePath.slice(relativePath.lastIndexOf("/") + 1) : relativePath;
    return compiled.test(subject) !== negated;
  };
}

/** Characters RE2 reads as syntax outside a class. */
const SYNTAX = new Set([..."\\.+*?()|[]{}^$"]);

function literal(char: string): string {
  return SYNTAX.has(char) ? `\\${char}` : char;
}

/** The RE2 source for a glob (without anchors), or the problem with it. */
function globToRe2(glob: string): string | { problem: string } {
  const braces = bracePairs(glob);
  /** For each open `{…}` alternation, where its `}` is. */
  const open: number[] = [];
  let out = "";
  let index = 0;
  const segmentStart = (at: number) => at === 0 || "/{,".includes(glob[at - 1]!) || false;
  const segmentEnd = (at: number) => at >= glob.length || "/},".includes(glob[at]!);
  while (index < glob.length) {
    const char = glob[index]!;
    if (char === "\\") {
      out += literal(glob[index + 1] ?? "\\");
      index += 2;
    } else if ("@!+*?".includes(char) && glob[index + 1] === "(") {
      return { problem: `extglobs like ${char}(a|b) are not supported; use {a,b} for alternatives` };
    } else if (char === "/" && glob.startsWith("**", index + 1) && segmentEnd(index + 3)) {
      // `a/**` is `a` and everything under it.
      out += "(?:/.*)?";
      index += 3;
    } else if (char === "*") {
      let end = index;
      while (glob[end] === "*") end++;
      const globstar = end - index >= 2 && segmentStart(index) && segmentEnd(end);
      if (globstar && glob[end] === "/") {
        out += "(?:[^/]*/)*";
        end++;
      } else out += globstar ? ".*" : "[^/]*";
      index = end;
    } else if (char === "?") {
      out += "[^/]";
      index++;
    } else if (char === "[") {
      const end = classEnd(glob, index);
      if (end < 0) {
        out += "\\[";
        index++;
        continue;
      }
      let content = glob.slice(index + 1, end);
      const negate = content.startsWith("!") || content.startsWith("^");
      if (negate) content = content.slice(1);
      out += negate ? `[^${content}/]` : `[${content}]`;
      index = end + 1;
    } else if (char === "{" && braces.has(index)) {
      const pair = braces.get(index)!;
      if (pair.range)
        return { problem: "ranges like {1..3} are not supported; list the alternatives: {1,2,3}" };
      open.push(pair.close);
      out += "(?:";
      index++;
    } else if (char === "," && open.length > 0) {
      out += "|";
      index++;
    } else if (char === "}" && open.at(-1) === index) {
      open.pop();
      out += ")";
      index++;
    } else {
      out += literal(char);
      index++;
    }
  }
  return out;
}

/** Where the bracket class opening at `start` closes, or -1 when it doesn't (the `[` is then literal). */
function classEnd(glob: string, start: number): number {
  let index = start + 1;
  if (glob[index] === "!" || glob[index] === "^") index++;
  if (glob[index] === "]") index++;
  while (index < glob.length && glob[index] !== "]") {
    if (glob[index] === "/") return -1;
    index += glob[index] === "\\" ? 2 : 1;
  }
  return index < glob.length ? index : -1;
}

/**
 * Each `{` that opens an alternation (a matching `}` with a `,` at its own level) or a range (`{1..3}`, no
 * comma), mapped to that `}`; any other brace is literal text.
 */
function bracePairs(glob: string): Map<number, { close: number; range: boolean }> {
  const pairs = new Map<number, { close: number; range: boolean }>();
  const stack: Array<{ at: number; comma: boolean }> = [];
  for (let index = 0; index < glob.length; index++) {
    const char = glob[index];
    if (char === "\\") index++;
    else if (char === "[") {
      const end = classEnd(glob, index);
      if (end > 0) index = end;
    } else if (char === "{") stack.push({ at: index, comma: false });
    else if (char === "," && stack.length > 0) stack[stack.length - 1]!.comma = true;
    else if (char === "}" && stack.length > 0) {
      const opened = stack.pop()!;
      if (opened.comma) pairs.set(opened.at, { close: index, range: false });
      else if (glob.slice(opened.at + 1, index).includes(".."))
        pairs.set(opened.at, { close: index, range: true });
    }
  }
  return pairs;
}
