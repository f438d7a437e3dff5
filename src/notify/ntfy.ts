import { z } from "zod";
import { safeParseJson } from "../lib/parse-json.js";
import { type Notifier, NotifyError, type PushoverMessage } from "./pushover.js";

export interface NtfySettings {
  /** The server: `https://ntfy.sh` or a self-hosted one. */
  url?: string;
  topic?: string;
  /** An access token (`tk_…`) for a protected topic; sent to `url` and nowhere else. */
  token?: string;
  timeoutMs?: number;
}

/** ntfy's priorities 1 (min) … 5 (urgent), from Pushover's −2 … 2. */
const PRIORITY_OF: Record<number, number> = { [-2]: 1, [-1]: 2, 0: 3, 1: 4, 2: 5 };
/** ntfy truncates messages at 4096 bytes; titles are kept short like Pushover's. */
const MESSAGE_LIMIT = 4000;
const TITLE_LIMIT = 250;

/**
 * The ntfy notifier: one JSON publish (`POST <url>` with `{topic, message, title, priority}`) to the owner's
 * configured server. Plain fetch, not the SSRF-guarded client: the owner chose the server, loopback included.
 * Redirects are refused, so neither the token nor the message ever reaches another host.
 */
/** ntfy answers a publish with the message as JSON; only its id is kept (any other shape: no id). */
const ntfyAnswer = z.looseObject({ id: z.string().optional().catch(undefined) });

export function createNtfyNotifier(settings: NtfySettings): Notifier {
  const { url, topic, token } = settings;
  const configured = Boolean(url && topic);
  const timeoutMs = settings.timeoutMs ?? 15_000;
  return {
    configured,
    async send(input: PushoverMessage) {
      if (!url || !topic) {
        throw new NotifyError(
          "ntfy.not_configured",
          "ntfy is not configured — set notify.ntfy.url and notify.ntfy.topic (or NTFY_URL and NTFY_TOPIC).",
        );
      }
      const body = {
        topic,
        message: (input.message.trim() || "(empty)").slice(0, MESSAGE_LIMIT),
        priority: PRIORITY_OF[input.priority ?? 0] ?? 3,
        ...(input.title ? { title: input.title.slice(0, TITLE_LIMIT) } : {}),
        ...(input.url ? { click: input.url } : {}),
      };
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify(body),
          redirect: "error",
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        const reason = error instanceof Error ? (error.cause ?? error) : error;
        throw new NotifyError(
          "ntfy.unreachable",
          `ntfy at ${url} could not be reached: ${reason instanceof Error ? reason.message : String(reason)}`,
        );
      }
      const text = await response.text();
      if (!response.ok) {
        const hint =
          response.status === 401 || response.status === 403
            ? " Check notify.ntfy.token (NTFY_TOKEN) and the topic's access."
            : "";
        throw new NotifyError(
          "ntfy.refused",
          `ntfy refused the notification (HTTP ${response.status}): ${text.slice(0, 200)}.${hint}`,
        );
      }
      const parsed = safeParseJson(text, ntfyAnswer, "ntfy response");
      return parsed.success ? (parsed.data.id ?? "") : "";
    },
  };
}
