import { z } from "zod";
import { channelAccessKeys } from "../src/config/sections/channel-access.js";
import { type ChannelCheck, credentialCheck, defineChannel } from "./channel-entry.js";
import { livenessLimit } from "./liveness.js";

const MB = 1024 * 1024;

/** `channels.slack`: the bot token, Socket Mode's app token or the signing secret, and the API URL for tests. */
export const slackSchema = z.strictObject({
  ...channelAccessKeys,
  botToken: z.string().min(1).optional(),
  appToken: z.string().min(1).optional(),
  signingSecret: z.string().min(1).optional(),
  apiUrl: z.string().url().optional(),
});

/** Slack in the channel catalog. */
export const slackChannel = defineChannel({
  name: "slack",
  label: "Slack",
  schema: slackSchema,
  env: [
    { env: "SLACK_BOT_TOKEN", key: "botToken" },
    { env: "SLACK_APP_TOKEN", key: "appToken" },
    { env: "SLACK_SIGNING_SECRET", key: "signingSecret" },
  ],
  secrets: ["botToken", "appToken", "signingSecret"],
  // Slack takes up to 1 GB, but the adapter holds the file in memory while it sends: Magpie stops at 100 MB.
  uploads: { photo: 100 * MB, document: 100 * MB },
  pairing: true,
  buttons: true,
  edits: true,
  // Socket Mode pings every few seconds (the client drops a socket without a pong after 5 s): silent for 30 s is
  // down. HTTP events only wait to be called.
  liveness: (section) => (section.appToken ? livenessLimit(section, 30) : null),
  isEnabled: (section) => section.enabled ?? Boolean(section.botToken),
  doctor: async (section, probe) => {
    const checks: ChannelCheck[] = [
      await credentialCheck("slack", "SLACK_BOT_TOKEN or channels.slack.botToken", async () => {
        const base = section.apiUrl ?? "https://slack.com/api/";
        const { body } = await probe(`${base.endsWith("/") ? base : `${base}/`}auth.test`, {
          method: "POST",
          headers: { authorization: `Bearer ${section.botToken}` },
        });
        const result = body as { ok?: boolean; error?: string; user?: string };
        return result.ok ? `authorized as ${result.user}` : { status: 401, error: result.error };
      }),
    ];
    if (!section.appToken && !section.signingSecret) {
      checks.push({
        name: "slack inbound",
        verdict: "fail",
        detail: "neither Socket Mode (appToken) nor signed HTTP events (signingSecret) is configured",
        fix: "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (events at /slack/events)",
      });
    }
    return checks;
  },
  create: async (deps) => (await import("./slack.js")).createSlackChannel(deps),
});
