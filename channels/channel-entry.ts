import type { z } from "zod";
import type { ChannelAccessConfig } from "../src/config/sections/channel-access.js";
import type { ChannelAdapter } from "../src/core/types.js";
import { errorMessage } from "../src/lib/errors.js";
import type { ChannelDeps } from "./channel-deps.js";
import type { Liveness } from "./liveness.js";

/** One line of `magpie doctor`. */
export interface ChannelCheck {
  name: string;
  verdict: "ok" | "fail" | "skip";
  detail: string;
  fix?: string;
}

/** An HTTP probe with doctor's timeout; the body is parsed JSON when it is JSON, else the text. */
export type DoctorProbe = (url: string, init?: RequestInit) => Promise<{ status: number; body: unknown }>;

/** Upload caps in bytes: a picture over `photo` goes as a document; over `document` it is refused. */
export interface UploadLimits {
  photo: number;
  document: number;
}

/**
 * Everything the rest of Magpie knows about one chat channel (DESIGN.md "One channel catalog"). It lives in
 * `channels/<name>-entry.ts`, which imports no chat library: config, access control and doctor read it at
 * start-up, and `create` loads the adapter only when the channel is on.
 */
export interface ChannelEntry<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  /** Config key (`channels.<name>`), the `channel` of every message, and what users type (`magpie pair approve <name> …`). */
  name: Name;
  /** How people write it in prose: "Telegram". */
  label: string;
  /** What is wrong with a chat id written in config (a delivery fallback path), or null; absent: any id. */
  chatIdProblem?(chatId: string): string | null;
  /** The `channels.<name>` section; it spreads `channelAccessKeys`. */
  schema: Schema;
  /** Environment variables that fill keys of the section when the file leaves them unset (`key`: dotted, `imap.password`). */
  env: ReadonlyArray<{ env: string; key: string }>;
  /** Keys of the section (dotted) whose values are secrets: redacted from logs, tool output and LLM requests. */
  secrets: readonly string[];
  /** What `message {file}` may send; null when the channel takes no files. */
  uploads: UploadLimits | null;
  /** Whether an unknown DM sender can be paired (a one-time code, approved by the owner). */
  pairing: boolean;
  buttons: boolean;
  edits: boolean;
  /**
   * A second connection with the same credentials may run beside the first, and the platform does not redeliver
   * what arrived while none was connected (Discord's gateway): a restart by a config reload starts the successor
   * before it stops the predecessor, and the inbox drops what both received. Unset: stop first (Telegram allows
   * one poller, and redelivers what was not acknowledged).
   */
  restartOverlap?: boolean;
  /**
   * Inbound liveness: how long the channel may go without completing a receive cycle before it is reconnected
   * (`livenessLimit(section, <its cycle + a margin>)`); null or absent when nothing is received in cycles (a
   * webhook only waits to be called).
   */
  liveness?(section: z.output<Schema>): Liveness | null;
  /** Whether the channel runs: `enabled`, or by default whether its credentials are present. */
  isEnabled(section: z.output<Schema>): boolean;
  /** Cross-key rules zod alone can't express, as `channels.<name>.<key>: …` lines. */
  configProblems?(section: z.output<Schema>): string[];
  /** `magpie doctor`'s lines for the channel when it is on: typically the credentials tried against the API. */
  doctor(section: z.output<Schema>, probe: DoctorProbe): Promise<ChannelCheck[]>;
  /** Loads the adapter's library (only now) and builds the adapter. */
  create(deps: ChannelDeps): Promise<ChannelAdapter>;
}

/** Declares a catalog entry, keeping its name and section types precise. */
export function defineChannel<const Name extends string, Schema extends z.ZodType<ChannelAccessConfig>>(
  entry: ChannelEntry<Name, Schema>,
): ChannelEntry<Name, Schema> {
  return entry;
}

/**
 * The usual doctor probe: try the credentials, say who they authorize, name the setting to fix on refusal.
 * `attempt` returns the detail line ("authorized as @magpie_bot"), or the refusal's status (and platform error).
 */
export async function credentialCheck(
  name: string,
  settingHint: string,
  attempt: () => Promise<string | { status: number; error?: string }>,
): Promise<ChannelCheck> {
  try {
    const result = await attempt();
    if (typeof result === "string") return { name, verdict: "ok", detail: result };
    return {
      name,
      verdict: "fail",
      detail: `the token was rejected (${result.error ?? result.status})`,
      fix: `check ${settingHint}`,
    };
  } catch (error) {
    return {
      name,
      verdict: "fail",
      detail: `cannot reach the API: ${errorMessage(error)}`,
      fix: "check the network or the redirect option",
    };
  }
}
