/**
 * Where the content of one turn came from (DESIGN.md → Security → "Untrusted content (the rule of two)"): the
 * untrusted sources that entered its context — a page, an API answer, a mail from a stranger, a trigger payload,
 * a guest's message, a file Magpie didn't write in an owner's untainted turn, a memory stored by a tainted turn.
 * The record lives as long as the turn (a delegated turn and a spawned subagent share their caller's, as they do
 * its approvals): the policy in `src/security/untrusted.ts` reads it at every tool call, so a denied goal is not
 * reachable through another tool.
 */
import { z } from "zod";

/** What kind of source it was (for the trace and the prompt; the label says which). */
export type UntrustedKind =
  | "web"
  | "mcp"
  | "mail"
  | "attachment"
  | "quote"
  | "trigger"
  | "guest"
  | "file"
  | "memory"
  | "history";

export interface UntrustedSource {
  kind: UntrustedKind;
  /** How a sentence names it: `https://…`, `mail from x@y`, `file downloads/r.md`. */
  label: string;
}

/** What a turn starts with, besides what its tool calls read (set by whoever builds the turn). */
export interface ProvenanceSeed {
  /** Untrusted content already in the turn's context (a guest's message, a payload, earlier history). */
  sources?: readonly UntrustedSource[];
  /** The owner's own words in this turn (not what they quote or attach): hosts named here count as named. */
  ownerWords?: string;
  /** Tools an unattended turn may still use after untrusted content (a job's `allowAfterUntrusted`). */
  allowAfterUntrusted?: readonly string[];
}

/** Keeps the record small: a turn that reads a thousand pages still names the first few. */
const MAX_SOURCES = 50;

export class TurnProvenance {
  private readonly list: UntrustedSource[] = [];
  private words = "";
  private allowed: readonly string[] = [];
  /** Real paths of the files this turn created (it may overwrite or delete those freely). */
  readonly created = new Set<string>();

  /** Adds what the turn starts with. The owner's words add up (a delegated turn keeps its caller's). */
  seed(seed: ProvenanceSeed | undefined): void {
    if (!seed) return;
    for (const source of seed.sources ?? []) this.add(source);
    if (seed.ownerWords) this.words = this.words ? `${this.words}\n${seed.ownerWords}` : seed.ownerWords;
    if (seed.allowAfterUntrusted) this.allowed = [...seed.allowAfterUntrusted];
  }

  /** Records that a source entered the turn's context (each once). */
  add(source: UntrustedSource): void {
    if (this.list.some((known) => known.kind === source.kind && known.label === source.label)) return;
    if (this.list.length < MAX_SOURCES) this.list.push({ kind: source.kind, label: source.label });
  }

  get tainted(): boolean {
    return this.list.length > 0;
  }

  get sources(): readonly UntrustedSource[] {
    return this.list;
  }

  get ownerWords(): string {
    return this.words;
  }

  get allowAfterUntrusted(): readonly string[] {
    return this.allowed;
  }

  /** "after reading https://…, mail from x@y and 2 more" — for approval prompts, refusals and the trace. */
  describe(): string {
    const shown = this.list.slice(0, 3).map((source) => source.label);
    const more = this.list.length - shown.length;
    return `after reading ${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
  }
}

/** Lines that start what an owner quotes or forwards (mail clients, chat apps): their words end there. */
const FORWARD_MARKERS = [
  "---------- forwarded message",
  "-----original message-----",
  "begin forwarded message",
  "-------- original message",
  "-------- forwarded message",
];

/**
 * Splits a message into its author's own words and what it quotes or forwards: the first line that starts with
 * `>` or a forward marker, or an "On … wrote:" line, begins the quoted part. One pass over the lines.
 */
export function ownWordsOf(text: string): { own: string; quoted: boolean } {
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.trim().toLowerCase();
    const wrote = line.startsWith("on ") && line.endsWith("wrote:");
    if (line.startsWith(">") || wrote || FORWARD_MARKERS.some((marker) => line.startsWith(marker)))
      return { own: lines.slice(0, index).join("\n"), quoted: true };
  }
  return { own: text, quoted: false };
}

/** An inbound message as the seed needs it (a subset of `InboundMessage`). */
export interface SeedMessage {
  channel: string;
  userId: string;
  userName: string;
  text: string;
  attachments: ReadonlyArray<{ kind: string; name?: string | undefined }>;
  replyTo?:
    | { userId?: string | undefined; text?: string | undefined; fromBot?: boolean | undefined }
    | undefined;
  note?: { origin: string; label?: string | undefined; untrusted?: boolean | undefined } | undefined;
}

/**
 * What a chat turn starts with (DESIGN.md → Security → "Untrusted content"): a guest's message, what an owner
 * quotes, forwards or attaches (their own words are trusted, what they quote is not), a mail from a non-owner
 * (a guest of the e-mail channel), a subagent's result, and the untrusted sources of earlier turns still in the
 * session's history. The owner's own words name the hosts the turn may reach.
 */
export function chatSeed(
  messages: readonly SeedMessage[],
  roleOf: (channel: string, userId: string) => "owner" | "guest",
  earlier: readonly UntrustedSource[],
  /** The channel's `capabilities.messageNoun` (e-mail's "mail"), read from its adapter, never its name. */
  messageNoun?: "mail",
): ProvenanceSeed {
  const sources: UntrustedSource[] = earlier.map((source) => ({
    kind: "history",
    label: source.label.startsWith("earlier in this chat: ")
      ? source.label
      : `earlier in this chat: ${source.label}`,
  }));
  const own: string[] = [];
  for (const message of messages) {
    const who = message.userName || message.userId;
    if (message.note) {
      // A subagent's result carries what the subagent read; an event's note is Magpie's own.
      if (message.note.origin === "spawn" && message.note.untrusted !== false)
        sources.push({
          kind: "history",
          label: `result of background task ${message.note.label ?? ""}`.trim(),
        });
      continue;
    }
    if (roleOf(message.channel, message.userId) !== "owner") {
      sources.push(
        messageNoun === "mail"
          ? { kind: "mail", label: `mail from ${who}` }
          : { kind: "guest", label: `message from guest ${who}` },
      );
      continue;
    }
    const split = ownWordsOf(message.text);
    own.push(split.own);
    if (split.quoted) sources.push({ kind: "quote", label: `text ${who} quoted or forwarded` });
    const reply = message.replyTo;
    if (reply?.text && !reply.fromBot && (!reply.userId || roleOf(message.channel, reply.userId) !== "owner"))
      sources.push({ kind: "quote", label: `the message ${who} replied to` });
    for (const attachment of message.attachments) {
      // A voice note is the owner speaking: their own words.
      if (attachment.kind === "voice" || attachment.kind === "sticker") continue;
      sources.push({
        kind: "attachment",
        label: `${attachment.kind}${attachment.name ? ` "${attachment.name.slice(0, 60)}"` : ""} attached by ${who}`,
      });
    }
  }
  return { sources, ownerWords: own.join("\n") };
}

const historySchema = z.array(z.object({ kind: z.string(), label: z.string() }));
/** At most this many earlier sources are remembered per session (the first ones name it well enough). */
const MAX_HISTORY_SOURCES = 10;

/** The kv store as the session's history taint uses it. */
export interface HistoryTaintStore {
  get<T>(key: string, schema: z.ZodType<T>): T | undefined;
  set(key: string, value: unknown): void;
  delete(key: string): void;
}

const historyKey = (sessionKey: string) => `untrusted-history:${sessionKey}`;

/** The untrusted sources of earlier turns whose messages are in the session's history (until `/reset`). */
export function historyTaint(kv: HistoryTaintStore, sessionKey: string): UntrustedSource[] {
  return (kv.get(historyKey(sessionKey), historySchema) ?? []).map((source) => ({
    kind: "history",
    label: source.label,
  }));
}

/** Remembers a finished turn's sources: its messages stay in the history the next turns read. */
export function rememberHistoryTaint(
  kv: HistoryTaintStore,
  sessionKey: string,
  provenance: TurnProvenance,
): void {
  if (!provenance.tainted) return;
  const known = historyTaint(kv, sessionKey);
  const labels = new Set(known.map((source) => source.label.replace(/^earlier in this chat: /, "")));
  for (const source of provenance.sources) {
    const label = source.label.replace(/^earlier in this chat: /, "");
    if (labels.has(label) || labels.size >= MAX_HISTORY_SOURCES) continue;
    labels.add(label);
    known.push({ kind: "history", label });
  }
  kv.set(historyKey(sessionKey), known);
}

/** `/reset`: the history is gone, and with it what it held. */
export function forgetHistoryTaint(kv: HistoryTaintStore, sessionKey: string): void {
  kv.delete(historyKey(sessionKey));
}
