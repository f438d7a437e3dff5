import { createRequire } from "node:module";
import { z } from "zod";
import { MagpieError } from "../lib/errors.js";
import { safeParseJson } from "../lib/parse-json.js";

/** A phone notification as Pushover takes it. Priority 2 (emergency) repeats every `retry` s until `expire` s. */
export interface PushoverMessage {
  message: string;
  title?: string;
  priority?: -2 | -1 | 0 | 1 | 2;
  sound?: string;
  retry?: number;
  expire?: number;
  url?: string;
}

export interface PushoverSettings {
  token?: string;
  user?: string;
  /** `http://host:port` HTTP proxy. */
  proxy?: string;
  timeoutMs?: number;
}

/** A phone notification service (DESIGN.md `notify`). */
export type PhoneProvider = "pushover" | "ntfy";

/** Sends phone notifications; `configured` is false without its credentials. */
export interface Notifier {
  readonly configured: boolean;
  /**
   * Resolves with the provider's id for the notification; throws NotifyError. `only`: the providers to use, where
   * a notifier stands for several (src/notify/phone.ts); a single provider ignores it.
   */
  send(message: PushoverMessage, only?: readonly PhoneProvider[]): Promise<string>;
}

export class NotifyError extends MagpieError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = "NotifyError";
  }
}

type PushoverCallback = (error: Error | undefined, body?: string, response?: { statusCode?: number }) => void;
interface PushoverClient {
  send(message: Record<string, unknown>, callback: PushoverCallback): void;
}
type PushoverConstructor = new (options: {
  token: string;
  user: string;
  httpOptions?: Record<string, unknown>;
  onerror?: (error: unknown) => void;
}) => PushoverClient;

const require = createRequire(import.meta.url);
const Pushover = require("pushover-notifications") as PushoverConstructor;

/** Pushover's limits (api docs): message 1024 chars, title 250; emergency retry ≥ 30 s, expire ≤ 10800 s. */
const MESSAGE_LIMIT = 1024;
const TITLE_LIMIT = 250;

/**
 * Builds the library's httpOptions. On Node 20 the library swaps only `host` for the proxy, but
 * `http.request` prefers `hostname`/`port` (still api.pushover.net:443) — so they must be set too.
 */
export function pushoverHttpOptions(proxy: string | undefined): Record<string, unknown> | undefined {
  if (!proxy) return undefined;
  const url = new URL(proxy);
  if (url.protocol !== "http:") {
    throw new NotifyError(
      "pushover.invalid_proxy",
      `notify.pushover.proxy must be an http://host:port proxy, got "${proxy}".`,
    );
  }
  return { proxy: url.origin, hostname: url.hostname, port: Number(url.port || 80) };
}

/** The Pushover notifier (pushover-notifications package). */
export function createPushoverNotifier(settings: PushoverSettings): Notifier {
  const { token, user } = settings;
  const configured = Boolean(token && user);
  const timeoutMs = settings.timeoutMs ?? 15_000;
  return {
    configured,
    send(input) {
      if (!token || !user) {
        return Promise.reject(
          new NotifyError(
            "pushover.not_configured",
            "Pushover is not configured — set notify.pushover.token and notify.pushover.user (or PUSHOVER_TOKEN and PUSHOVER_USER_KEY).",
          ),
        );
      }
      const body = buildBody(input);
      return new Promise<string>((resolve, reject) => {
        let settled = false;
        const finish = (error: NotifyError | null, requestId?: string) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(requestId ?? "");
        };
        const timer = setTimeout(
          () =>
            finish(new NotifyError("pushover.timeout", `Pushover did not answer within ${timeoutMs} ms.`)),
          timeoutMs,
        );
        const client = new Pushover({
          token,
          user,
          httpOptions: pushoverHttpOptions(settings.proxy),
          // Without onerror the library throws from its response handler; failures are judged below instead.
          onerror: () => undefined,
        });
        client.send(body, (error, text, response) => {
          if (error) {
            finish(
              new NotifyError("pushover.unreachable", `Pushover could not be reached: ${error.message}`),
            );
            return;
          }
          finish(...judge(text ?? "", response?.statusCode ?? 0));
        });
      });
    },
  };
}

function buildBody(input: PushoverMessage): Record<string, unknown> {
  const priority = input.priority ?? 0;
  const body: Record<string, unknown> = {
    message: truncate(input.message.trim() || "(empty)", MESSAGE_LIMIT),
    priority,
  };
  if (input.title) body.title = truncate(input.title, TITLE_LIMIT);
  if (input.sound) body.sound = input.sound;
  if (input.url) body.url = input.url;
  if (priority === 2) {
    body.retry = Math.max(30, input.retry ?? 60);
    body.expire = Math.min(10_800, input.expire ?? 3600);
  }
  return body;
}

/** Pushover's answer; a field of another type counts as absent, as when it wasn't JSON at all. */
const pushoverAnswer = z.looseObject({
  status: z.number().optional().catch(undefined),
  request: z.string().optional().catch(undefined),
  errors: z.array(z.string()).optional().catch(undefined),
});

function judge(text: string, statusCode: number): [NotifyError | null, string?] {
  // Not JSON, or not Pushover's shape: judged by the status code below.
  const answer = safeParseJson(text, pushoverAnswer, "Pushover response");
  const parsed = answer.success ? answer.data : {};
  if (statusCode >= 200 && statusCode < 300 && parsed.status === 1) return [null, parsed.request];
  const reason = parsed.errors?.join("; ") || text.slice(0, 200) || "no response body";
  if (statusCode === 400 || statusCode === 401) {
    return [
      new NotifyError(
        "pushover.rejected",
        `Pushover rejected the notification (${statusCode}): ${reason}. Check notify.pushover.token/user (PUSHOVER_TOKEN/PUSHOVER_USER_KEY).`,
      ),
    ];
  }
  return [new NotifyError("pushover.failed", `Pushover answered ${statusCode}: ${reason}`)];
}

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}
