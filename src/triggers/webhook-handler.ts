import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SeenSignatures } from "./seen-signatures.js";
import type { TriggerEvent, TriggerResult } from "./trigger.js";

/** The largest body a webhook takes (DESIGN.md → Triggers). */
export const MAX_WEBHOOK_BODY = 1024 * 1024;
/** How far a signed timestamp may be from now, either way. */
const WINDOW_MS = 5 * 60_000;
/** Signatures remembered at most (valid ones only, for one window): past this, senders are asked to slow down. */
export const MAX_REMEMBERED_SIGNATURES = 10_000;
/** Headers passed on to `event.headers` (never the signature or auth headers). */
const PASSED_HEADERS = [
  "content-type",
  "user-agent",
  "x-github-event",
  "x-github-delivery",
  "x-magpie-timestamp",
];

export interface WebhookTriggers {
  /** The webhook secret of an enabled webhook trigger named `name`, or undefined. */
  secretOf(name: string): string | undefined;
  /** True when the trigger would drop an event now (past maxPerHour): answered 429 before the work. */
  handle(name: string, event: TriggerEvent): TriggerResult;
}

/**
 * `POST /hooks/<name>`: a body of at most 1 MB, signed `X-Magpie-Signature: sha256=<HMAC-SHA256 of
 * "<X-Magpie-Timestamp>.<body>">` with the trigger's secret, the timestamp in Unix seconds within 5 minutes of
 * now, each signature accepted once. 404 for a name that is not a webhook trigger (the same answer whatever
 * exists), 413 for a big body, 401 for a bad, missing, replayed or stale signature, 429 when the trigger drops
 * the event, 202 otherwise (with what became of it).
 */
export function createWebhookHandler(triggers: WebhookTriggers, seen: SeenSignatures, now: () => number) {
  return async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const answer = (status: number, body: Record<string, unknown>) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const name = decodeName(request.url ?? "");
    const secret = name === null ? undefined : triggers.secretOf(name);
    if (name === null || secret === undefined) {
      request.resume();
      return answer(404, { error: "not found" });
    }
    const declared = Number(request.headers["content-length"] ?? 0);
    if (declared > MAX_WEBHOOK_BODY) {
      response.setHeader("connection", "close");
      return answer(413, { error: `body over ${MAX_WEBHOOK_BODY} bytes` });
    }
    const body = await readCapped(request, MAX_WEBHOOK_BODY);
    if (body === null) {
      response.setHeader("connection", "close");
      return answer(413, { error: `body over ${MAX_WEBHOOK_BODY} bytes` });
    }
    const at = now();
    const verdict = verify(
      secret,
      singleHeader(request, "x-magpie-timestamp"),
      singleHeader(request, "x-magpie-signature"),
      body,
      at,
    );
    if (typeof verdict === "string") return answer(401, { error: verdict });
    // Only after the signature is good: an unsigned request writes no row. Keyed on the MAC's bytes, never on how
    // the header spelled them. The row is committed before the event is handed over, in the same synchronous step
    // (no await between): no crash or restart can leave an accepted event whose signature isn't recorded. It stays
    // until the timestamp is stale, plus one window for a clock stepped back.
    const claim = seen.claim(name, verdict.mac, verdict.timestamp * 1000 + 2 * WINDOW_MS, at);
    if (claim === "used") return answer(401, { error: "signature already used" });
    if (claim === "full") return answer(429, { error: "too many requests" });
    const result = triggers.handle(name, {
      source: "webhook",
      payload: parseBody(body),
      headers: passedHeaders(request),
      at,
    });
    if (result === "dropped") {
      // Not taken: the row goes, so a flood past maxPerHour leaves no rows and the sender may retry it.
      seen.release(verdict.mac);
      return answer(429, { error: "too many events", result });
    }
    return answer(202, { result });
  };
}

/**
 * The one spelling of a signature: `sha256=` and 64 lower-case hex digits, nothing before or after. Buffer's hex
 * decoder stops quietly at the first odd or non-hex character, so anything looser would let one MAC be written
 * many ways.
 */
const SIGNATURE = /^sha256=([0-9a-f]{64})$/;

/** Why a signature is refused, or the MAC it carries (good for this body and timestamp) and that timestamp. */
function verify(
  secret: string,
  timestamp: string | undefined | null,
  signature: string | undefined | null,
  body: Buffer,
  now: number,
): string | { mac: Buffer; timestamp: number } {
  if (timestamp === null || signature === null)
    return "send X-Magpie-Timestamp and X-Magpie-Signature once each";
  if (!timestamp || !signature) return "missing X-Magpie-Timestamp or X-Magpie-Signature";
  if (!/^\d{1,12}$/.test(timestamp)) return "bad timestamp";
  if (Math.abs(now - Number(timestamp) * 1000) > WINDOW_MS) return "stale timestamp";
  const hex = SIGNATURE.exec(signature)?.[1];
  if (!hex) return "bad signature: expected sha256=<64 lower-case hex digits>";
  const expected = createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest();
  const given = Buffer.from(hex, "hex");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "bad signature";
  return { mac: given, timestamp: Number(timestamp) };
}

/** The signature a sender puts in `X-Magpie-Signature` (tests, docs and `magpie` itself use it). */
export function signWebhook(secret: string, timestamp: number, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")}`;
}

function decodeName(url: string): string | null {
  const path = url.split("?")[0] ?? "";
  if (!path.startsWith("/hooks/")) return null;
  const name = path.slice("/hooks/".length);
  return /^[a-zA-Z0-9_-]{1,64}$/.test(name) ? name : null;
}

/** A header that must come once: undefined when absent, null when sent more than once. */
function singleHeader(request: IncomingMessage, name: string): string | undefined | null {
  const values = request.headersDistinct[name];
  if (!values) return undefined;
  return values.length === 1 ? values[0] : null;
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function passedHeaders(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = header(request, name);
    if (value !== undefined) headers[name] = value.slice(0, 500);
  }
  return headers;
}

/** Reads the body; null once it passes `limit` bytes (the rest is left unread and the connection closed). */
function readCapped(request: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      request.off("data", onData);
      request.pause();
      resolve(null);
    };
    request.on("data", onData);
    request.once("end", () => resolve(Buffer.concat(chunks)));
    request.once("error", reject);
  });
}

/** JSON when the body is JSON, else its text. */
export function parseBody(body: Buffer | string): unknown {
  const text = typeof body === "string" ? body : body.toString("utf8");
  // V8's JSON.parse spends ~1 s failing on 1 MB of `[`: a body nested past any real payload's depth is text.
  if (nestingDeeperThan(text, MAX_JSON_DEPTH)) return text;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed;
  } catch {
    return text;
  }
}

/** Deeper than any real event payload; predicates over it would overflow anyway. */
const MAX_JSON_DEPTH = 1_000;

/** True when brackets outside JSON strings nest deeper than `limit` — one linear pass, no allocation. */
function nestingDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index += 1; // backslash: the next character is escaped
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
  }
  return false;
}
