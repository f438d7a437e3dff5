import { type Redactor, type SecretEncoding, secretForms } from "../log/redact.js";
import { SECRET_PATTERNS } from "../log/secret-patterns.js";
import { GuardRefusal } from "./guard-refusal.js";

/**
 * The deterministic output filter (DESIGN.md → Security → Untrusted content): what leaves a tainted turn —
 * message text, URLs, request bodies and headers, text typed into a page — is checked for the owner's secrets
 * (in every form the redactor knows) and for fragments of the owners' private memories, and refused if it holds
 * one. No I/O: the caller says whether the turn is tainted and hands over the secrets (the redactor) and the
 * private memories (src/tools/outbound-check.ts does, at the tools' send points).
 *
 * What it sees through, on top of the redactor's own forms (plain, reversed, hex, base64/base64url at every
 * alignment, wrapped over lines):
 * - escapes, decoded repeatedly (double encoding): percent-encoding (`%41`, `%2541`), JSON and JS escapes
 *   (`\u0041`, `\x41`, `\n`), HTML character references (`&#65;`, `&#x41;`, `&amp;`);
 * - Unicode tricks: invisible format characters (zero-width space and joiner, soft hyphen, bidi marks) are
 *   dropped and compatibility forms folded (NFKC: full-width `ｓｋ` is `sk`);
 * - case: forms are compared case-insensitively;
 * - splitting: letters and digits are also compared with every other character taken out, so a secret written
 *   `a b c`, `a-b-c`, `a.b.c`, `a\nb\nc` is found — for forms with at least `MIN_SPLIT_FORM` letters and digits
 *   (a shorter word split up is too likely to be ordinary text: `summer 2024`);
 * - well-known credential formats (`sk-…`, `ghp_…`, private key blocks …), configured or not.
 *
 * Private memories: text is folded to its letters and digits, lower case (so spacing, punctuation, case and
 * invisible characters don't matter) and any run of `MEMORY_FRAGMENT` folded characters a memory shares with the
 * outbound value counts — read forwards, backwards, or inside base64 or hex runs of the value. A memory shorter
 * than that counts when it appears whole, if it has at least `MIN_MEMORY` folded characters (shorter ones —
 * "likes tea" — are ordinary phrases, not something to refuse on).
 *
 * Linear on a 1 MB value: every pass is a single scan (no backtracking pattern: the form matcher is one
 * alternation of escaped literals, the same shape as the redactor's); the memory matcher is a rolling hash over
 * winnowed fingerprints (below).
 */

/** The error code of a refusal (a guard rule ID, like `ssrf.private_address`). */
export const OUTPUT_BLOCKED = "security.output_blocked";

/** A folded form needs this many letters and digits to be looked for with separators taken out. */
export const MIN_SPLIT_FORM = 12;
/** Folded characters of a private memory that count as leaking it. */
export const MEMORY_FRAGMENT = 24;
/** Memories with fewer folded characters than this are not looked for. */
export const MIN_MEMORY = 12;

/** Where an outbound value goes. */
export type OutboundKind = "message" | "file" | "url" | "body" | "headers" | "query" | "typed text";

const KIND_LABEL: Record<OutboundKind, string> = {
  message: "message text",
  file: "file to send",
  url: "URL",
  body: "request body",
  headers: "request headers",
  query: "search query",
  "typed text": "text to type",
};

/** What the filter found; never the value itself. */
export interface OutboundFinding {
  kind: OutboundKind;
  found: "secret" | "credential" | "private memory";
  /** How it was written: "base64, split by separators", "percent-encoded", a credential format's name … */
  how: string;
}

/** The outbound value: text, or headers (checked as `name: value` lines). */
export type OutboundValue = string | Readonly<Record<string, string>> | undefined;

export interface OutboundContext {
  /** Whether untrusted content entered the turn; an untainted turn's output is not checked. */
  tainted: boolean;
  /** The owner's secrets: the redactor's (config secrets, secret env keys, tokens). */
  secrets: Redactor;
  /** The contents of the memories private to the owners; read only when a tainted turn sends something. */
  privateMemories: () => Iterable<string>;
}

/** One value leaving the turn and where it goes. */
export interface OutboundPart {
  kind: OutboundKind;
  value: OutboundValue;
}

/**
 * Checks one outbound value of a turn: null when it may leave (an untainted turn, or nothing found), else what
 * was found.
 */
export function checkOutbound(
  kind: OutboundKind,
  value: OutboundValue,
  context: OutboundContext,
): OutboundFinding | null {
  return checkOutboundParts([{ kind, value }], context);
}

/** `checkOutbound` for the parts of one action (a request's URL, headers and body): the first finding. */
export function checkOutboundParts(
  parts: readonly OutboundPart[],
  context: OutboundContext,
): OutboundFinding | null {
  if (!context.tainted) return null;
  const texts: Array<{ kind: OutboundKind; views: View[] }> = [];
  for (const { kind, value } of parts) {
    if (value === undefined) continue;
    const text = typeof value === "string" ? value : headerLines(value);
    if (text.length > 0) texts.push({ kind, views: viewsOf(text) });
  }
  for (const { kind, views } of texts) {
    const found = findSecret(kind, views, context.secrets);
    if (found) return { kind, ...found };
  }
  if (texts.length === 0) return null;
  const index = PrivateMemoryIndex.of(context.privateMemories());
  for (const { kind, views } of texts) {
    const how = findPrivateMemory(views, index);
    if (how) return { kind, found: "private memory", how };
  }
  return null;
}

/** Throws the refusal for what `checkOutboundParts` found (a `security.output_blocked` guard refusal), if any. */
export function refuseOutbound(parts: readonly OutboundPart[], context: OutboundContext): void {
  const finding = checkOutboundParts(parts, context);
  if (finding) throw new GuardRefusal(OUTPUT_BLOCKED, outboundRefusal(finding));
}

/** The refusal's text for the model: what kind was found where, never the value. */
export function outboundRefusal(finding: OutboundFinding): string {
  const what =
    finding.found === "secret"
      ? "one of the owner's secrets"
      : finding.found === "credential"
        ? "a credential"
        : "text of one of the owners' private memories";
  return (
    `Refused: the ${KIND_LABEL[finding.kind]} holds ${what} (${finding.how}), and this turn has read untrusted ` +
    "content, so nothing that carries secrets or private memories may leave it. Send it without that, or ask " +
    "the owner to do it in a new message."
  );
}

function headerLines(headers: Readonly<Record<string, string>>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Views of the value: decoded, normalised, folded.

/** Invisible format characters (Unicode category Cf: zero-width space/joiner, soft hyphen, bidi marks …). */
const FORMAT_CHARS = /\p{Cf}+/gu;
const NON_ASCII = /[^\x00-\x7f]/;
/** Everything but letters and digits. */
const NOT_ALNUM = /[^\p{L}\p{N}]+/gu;
const NOT_ALNUM_ASCII = /[^a-z0-9]+/g;
const PERCENT_RUN = /(?:%[0-9a-f]{2})+/gi;
const BACKSLASH_ESCAPE = /\\(?:u([0-9a-f]{4})|x([0-9a-f]{2})|([nrtbf"'\\/]))/gi;
const CHARACTER_REFERENCE = /&(?:#x([0-9a-f]{1,6})|#([0-9]{1,7})|(amp|lt|gt|quot|apos));?/gi;
const SIMPLE_ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", b: "\b", f: "\f" };
const NAMED_REFERENCES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
/** Rounds of decoding: enough for a value encoded twice over in two different ways. */
const DECODE_ROUNDS = 4;

/** Without format characters, compatibility forms folded (NFKC), lower case. */
function normalise(text: string): string {
  // ASCII has no format characters and is its own NFKC form: skip the two passes.
  const plain = NON_ASCII.test(text) ? text.replace(FORMAT_CHARS, "").normalize("NFKC") : text;
  return plain.toLowerCase();
}

/** Only the letters and digits of normalised text (ASCII text by a cheaper pattern). */
function foldNormalised(normalised: string): string {
  return normalised.replace(NON_ASCII.test(normalised) ? NOT_ALNUM : NOT_ALNUM_ASCII, "");
}

/** Only the letters and digits of `text`, normalised. */
function fold(text: string): string {
  return foldNormalised(normalise(text));
}

function codePoint(hex: string | undefined, decimal: string | undefined): string | null {
  const value = hex !== undefined ? Number.parseInt(hex, 16) : Number(decimal);
  return value <= 0x10ffff ? String.fromCodePoint(value) : null;
}

/** One round of every escape this filter decodes; lenient (a malformed escape stays as it is). */
function decodeOnce(text: string): string {
  let out = text.includes("%")
    ? text.replace(PERCENT_RUN, (run) => Buffer.from(run.replaceAll("%", ""), "hex").toString("utf8"))
    : text;
  if (out.includes("\\")) {
    out = out.replace(BACKSLASH_ESCAPE, (whole, unicode?: string, byte?: string, simple?: string) => {
      if (unicode !== undefined) return String.fromCharCode(Number.parseInt(unicode, 16));
      if (byte !== undefined) return String.fromCharCode(Number.parseInt(byte, 16));
      return simple === undefined ? whole : (SIMPLE_ESCAPES[simple.toLowerCase()] ?? simple);
    });
  }
  if (out.includes("&")) {
    out = out.replace(CHARACTER_REFERENCE, (whole, hex?: string, decimal?: string, name?: string) => {
      if (name !== undefined) return NAMED_REFERENCES[name.toLowerCase()] ?? whole;
      return codePoint(hex, decimal) ?? whole;
    });
  }
  return out;
}

/** One way of reading the value: as sent, or with its escapes decoded. */
interface View {
  /** The text itself (with escapes decoded in the second view). */
  raw: string;
  /** Normalised: no format characters, NFKC, lower case. */
  normalised: string;
  /** Only the letters and digits of `normalised`. */
  folded: string;
  /** How the view was read, for the refusal ([] as sent). */
  note: string[];
}

const ESCAPED = "inside escapes (percent, JSON or HTML)";

function view(raw: string, note: string[]): View {
  const normalised = normalise(raw);
  return { raw, normalised, folded: foldNormalised(normalised), note };
}

/** The value as sent and, when it holds escapes, decoded. */
function viewsOf(text: string): View[] {
  const decoded = decodeEscapes(text);
  return decoded === text ? [view(text, [])] : [view(text, []), view(decoded, [ESCAPED])];
}

/** The value with its escapes decoded until nothing changes (at most `DECODE_ROUNDS` rounds). */
function decodeEscapes(text: string): string {
  let current = text;
  for (let round = 0; round < DECODE_ROUNDS; round++) {
    const next = decodeOnce(current);
    if (next === current) break;
    current = next;
  }
  return current;
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets: the redactor's forms, matched against the views.

/** One alternation of escaped literals and what each literal stands for. */
interface FormMatcher {
  pattern: RegExp | null;
  labels: Map<string, SecretEncoding>;
}

interface SecretMatchers {
  /** Normalised forms, looked for in normalised views. */
  whole: FormMatcher;
  /** Folded forms with at least MIN_SPLIT_FORM characters, looked for in folded views. */
  split: FormMatcher;
}

/** Matchers per redactor, rebuilt when it gained secrets (a reload adds, never removes). */
const matcherCache = new WeakMap<Redactor, { size: number; matchers: SecretMatchers }>();

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function formMatcher(forms: Map<string, SecretEncoding>): FormMatcher {
  if (forms.size === 0) return { pattern: null, labels: forms };
  // Longest first, so the label is the most specific form that matched.
  const literals = [...forms.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
  // regex-dynamic: an alternation of escaped literals, the owner's secrets and their encoded forms
  return { pattern: new RegExp(literals.join("|")), labels: forms };
}

function secretMatchers(redactor: Redactor): SecretMatchers {
  const cached = matcherCache.get(redactor);
  if (cached && cached.size === redactor.size) return cached.matchers;
  const whole = new Map<string, SecretEncoding>();
  const split = new Map<string, SecretEncoding>();
  for (const secret of redactor.secretValues()) {
    for (const form of secretForms(secret)) {
      const normalised = normalise(form.text);
      if (normalised.length > 0 && !whole.has(normalised)) whole.set(normalised, form.encoding);
      const folded = fold(form.text);
      if (folded.length >= MIN_SPLIT_FORM && !split.has(folded)) split.set(folded, form.encoding);
    }
  }
  const matchers = { whole: formMatcher(whole), split: formMatcher(split) };
  matcherCache.set(redactor, { size: redactor.size, matchers });
  return matchers;
}

function matchForm(matcher: FormMatcher, text: string): SecretEncoding | null {
  const match = matcher.pattern?.exec(text);
  return match ? (matcher.labels.get(match[0]) ?? "plain") : null;
}

/** A private key's first line; bounded, so a run of BEGINs can't make it backtrack far. */
const PRIVATE_KEY_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----/;

/**
 * The name of a well-known credential format in `text`, if one is there (the redactor's patterns). In headers the
 * Authorization pattern is left out: carrying a token is what that header is for, and a token of the owner's is
 * found as a secret anyway.
 */
function credentialFormat(kind: OutboundKind, text: string): string | null {
  for (const { name, pattern, keepPrefix } of SECRET_PATTERNS) {
    if (keepPrefix && kind === "headers") continue;
    pattern.lastIndex = 0;
    const hit = pattern.test(text);
    pattern.lastIndex = 0;
    if (hit) return name;
  }
  // A key's BEGIN line counts without its END: a truncated key still leaks most of it.
  return PRIVATE_KEY_BEGIN.test(text) ? "private key" : null;
}

function describeForm(encoding: SecretEncoding, transformations: string[]): string {
  const base =
    encoding === "plain" ? "as it is" : encoding === "reversed" ? "reversed" : `${encoding}-encoded`;
  return [base, ...transformations].join(", ");
}

function findSecret(
  kind: OutboundKind,
  views: View[],
  redactor: Redactor,
): Omit<OutboundFinding, "kind"> | null {
  const matchers = secretMatchers(redactor);
  for (const { normalised, folded, note } of views) {
    const whole = matchForm(matchers.whole, normalised);
    if (whole) return { found: "secret", how: describeForm(whole, note) };
    const split = matchForm(matchers.split, folded);
    if (split) return { found: "secret", how: describeForm(split, [...note, "split by separators"]) };
  }
  for (const { raw, note } of views) {
    const text = NON_ASCII.test(raw) ? raw.replace(FORMAT_CHARS, "").normalize("NFKC") : raw;
    const format = credentialFormat(kind, text);
    if (format) return { found: "credential", how: [format, ...note].join(", ") };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// Private memories: winnowed fingerprints of the folded memories, probed by a rolling hash over the value.

/**
 * Length of the hashed k-grams and of the winnowing window. Winnowing (Schleimer, Wilkerson and Aiken, "Winnowing:
 * local algorithms for document fingerprinting", SIGMOD 2003) keeps the smallest hash of every WINDOW consecutive
 * k-grams of a memory, so any run of KGRAM + WINDOW - 1 = MEMORY_FRAGMENT characters it shares with the value
 * contains one kept k-gram: the value is probed at every position, the memories are stored at about
 * 2 / (WINDOW + 1) of theirs. Hand-written: no maintained package does winnowing with a rolling hash, and the
 * whole of it is the few lines below.
 */
const KGRAM = 12;
const WINDOW = MEMORY_FRAGMENT - KGRAM + 1;
/** An odd multiplier: the polynomial hash runs in 32-bit integer arithmetic (wrapping), no division. */
const BASE = 0x01000193;
/** Hashes are kept to 30 bits, small integers for V8 (fast Map keys, packed arrays). */
const HASH_MASK = 0x3fffffff;
/** The `seen` filter: 2^22 bits (512 KB), indexed by the top bits of a hash, bit by its low 5 bits. */
const SEEN_WORDS = 1 << 17;
const SEEN_SHIFT = 30 - 17;
/**
 * Places kept per fingerprint: bounds the verification work a value of one repeated character can cause. A
 * 12-character stretch that more than 8 memories share is verified against the first 8 only (such a stretch is a
 * common phrase; the other windows of a longer quotation still find the rest).
 */
const MAX_PLACES = 8;

/** BASE^(KGRAM-1) mod 2^32: the weight of the character leaving the rolling window. */
const LEADING_WEIGHT = (() => {
  let weight = 1;
  for (let i = 0; i < KGRAM - 1; i++) weight = Math.imul(weight, BASE);
  return weight;
})();

/** The rolling hash of every KGRAM-character window of `text`, by position (one multiply per character). */
function kgramHashes(text: string): number[] {
  const hashes: number[] = [];
  let rolling = 0;
  for (let i = 0; i < text.length; i++) {
    if (i >= KGRAM) rolling = (rolling - Math.imul(text.charCodeAt(i - KGRAM), LEADING_WEIGHT)) | 0;
    rolling = (Math.imul(rolling, BASE) + text.charCodeAt(i)) | 0;
    if (i >= KGRAM - 1) hashes.push(rolling & HASH_MASK);
  }
  return hashes;
}

/** A kept k-gram: the folded memory, where the k-gram starts, and how long a shared run must be to count. */
interface Place {
  memory: string;
  at: number;
  need: number;
}

let lastIndex: { key: string; index: PrivateMemoryIndex } | undefined;

/** The owners' private memories, folded and fingerprinted. */
export class PrivateMemoryIndex {
  private readonly places = new Map<number, Place[]>();
  /** One bit per hash bucket, set for every kept fingerprint: most probes end here, without a Map lookup. */
  private readonly seen = new Uint32Array(SEEN_WORDS);

  static build(memories: Iterable<string>): PrivateMemoryIndex {
    const index = new PrivateMemoryIndex();
    for (const memory of memories) index.add(fold(memory));
    return index;
  }

  /**
   * The index of `memories`, reused while they stay the same: the last one built is kept with the memories it
   * was built from (comparing them is one pass over the text; building is several).
   */
  static of(memories: Iterable<string>): PrivateMemoryIndex {
    const key = [...memories].join("\u0000");
    if (lastIndex?.key !== key) lastIndex = { key, index: PrivateMemoryIndex.build(key.split("\u0000")) };
    return lastIndex.index;
  }

  get isEmpty(): boolean {
    return this.places.size === 0;
  }

  private keep(hash: number, place: Place): void {
    this.seen[hash >>> SEEN_SHIFT]! |= 1 << (hash & 31);
    const list = this.places.get(hash);
    if (!list) this.places.set(hash, [place]);
    else if (list.length < MAX_PLACES) list.push(place);
  }

  private add(memory: string): void {
    if (memory.length < MIN_MEMORY) return;
    const hashes = kgramHashes(memory);
    if (memory.length < MEMORY_FRAGMENT) {
      // Counts only whole, so its first k-gram is in any match.
      this.keep(hashes[0]!, { memory, at: 0, need: memory.length });
      return;
    }
    let kept = -1;
    for (let start = 0; start + WINDOW <= hashes.length; start++) {
      // The rightmost smallest hash of the window: while the last choice is still inside, only the newcomer can
      // beat it; a window sharing the previous choice adds nothing.
      const newest = start + WINDOW - 1;
      let chosen = kept;
      if (kept >= start) {
        if (hashes[newest]! <= hashes[kept]!) chosen = newest;
      } else {
        chosen = start;
        for (let i = start + 1; i <= newest; i++) if (hashes[i]! <= hashes[chosen]!) chosen = i;
      }
      if (chosen !== kept) {
        this.keep(hashes[chosen]!, { memory, at: chosen, need: MEMORY_FRAGMENT });
        kept = chosen;
      }
    }
  }

  /** True when folded `text` shares a counting run with a memory. */
  matches(text: string): boolean {
    if (this.places.size === 0 || text.length < MIN_MEMORY) return false;
    const seen = this.seen;
    // kgramHashes' rolling hash, inline: this loop runs over every character sent out, without an array.
    let rolling = 0;
    for (let i = 0; i < text.length; i++) {
      if (i >= KGRAM) rolling = (rolling - Math.imul(text.charCodeAt(i - KGRAM), LEADING_WEIGHT)) | 0;
      rolling = (Math.imul(rolling, BASE) + text.charCodeAt(i)) | 0;
      if (i < KGRAM - 1) continue;
      const hash = rolling & HASH_MASK;
      if ((seen[hash >>> SEEN_SHIFT]! & (1 << (hash & 31))) === 0) continue;
      const places = this.places.get(hash);
      if (!places) continue;
      const position = i - KGRAM + 1;
      for (const place of places) if (sharedRun(text, position, place) >= place.need) return true;
    }
    return false;
  }
}

/**
 * Length of the run `text` (k-gram at `position`) and the memory (k-gram at `place.at`) share around the
 * k-gram, counted no further than `place.need` — constant work per probe.
 */
function sharedRun(text: string, position: number, place: Place): number {
  const { memory, at, need } = place;
  for (let i = 0; i < KGRAM; i++) if (text.charCodeAt(position + i) !== memory.charCodeAt(at + i)) return 0;
  let length = KGRAM;
  let right = 0;
  while (
    length < need &&
    position + KGRAM + right < text.length &&
    at + KGRAM + right < memory.length &&
    text.charCodeAt(position + KGRAM + right) === memory.charCodeAt(at + KGRAM + right)
  ) {
    right++;
    length++;
  }
  let left = 1;
  while (
    length < need &&
    position - left >= 0 &&
    at - left >= 0 &&
    text.charCodeAt(position - left) === memory.charCodeAt(at - left)
  ) {
    left++;
    length++;
  }
  return length;
}

/** Runs of base64 (either alphabet) long enough to hold a fragment, and of hex. */
const BASE64_RUN = /[A-Za-z0-9+/_-]{32,}/g;
const HEX_RUN = /[0-9a-fA-F]{48,}/g;
const LINE_BREAK = /\r?\n/g;

/**
 * The ASCII letters and digits of `bytes`, lower case (a byte loop: decoded runs are mostly not text, and a
 * Unicode-aware fold of that noise costs far more than the rest of the check).
 */
function foldBytes(bytes: Buffer): string {
  const out = Buffer.allocUnsafe(bytes.length);
  let length = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7a)) out[length++] = byte;
    else if (byte >= 0x41 && byte <= 0x5a) out[length++] = byte + 0x20;
  }
  return out.toString("latin1", 0, length);
}

/**
 * The ASCII letters and digits inside base64 and hex runs of `text`, folded (line breaks taken out first:
 * encoders wrap lines). Letters beyond ASCII inside an encoded run are not compared.
 */
function foldedRuns(text: string): string {
  const compact = text.replace(LINE_BREAK, "");
  const out: string[] = [];
  for (const match of compact.matchAll(BASE64_RUN)) {
    const run = match[0];
    for (let shift = 0; shift < 4; shift++) out.push(foldBytes(Buffer.from(run.slice(shift), "base64")));
  }
  for (const match of compact.matchAll(HEX_RUN)) {
    const run = match[0];
    for (let shift = 0; shift < 2; shift++) out.push(foldBytes(Buffer.from(run.slice(shift), "hex")));
  }
  return out.join("");
}

/** `text` backwards, one UTF-16 unit at a time (a native pass; the folded text is letters and digits). */
function reverseUnits(text: string): string {
  return Buffer.from(text, "utf16le").reverse().swap16().toString("utf16le");
}

function findPrivateMemory(views: View[], index: PrivateMemoryIndex): string | null {
  if (index.isEmpty) return null;
  // The last view is the decoded one: decoding only ever adds what a plain check would miss.
  const { raw, folded, note } = views[views.length - 1]!;
  if (index.matches(folded)) return describeForm("plain", note);
  if (index.matches(reverseUnits(folded))) return describeForm("reversed", note);
  if (index.matches(foldedRuns(raw))) return "base64- or hex-encoded";
  return null;
}
