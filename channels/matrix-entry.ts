import { z } from "zod";
import { channelAccessKeys } from "../src/config/sections/channel-access.js";
import { credentialCheck, defineChannel } from "./channel-entry.js";
import { livenessLimit } from "./liveness.js";

const MB = 1024 * 1024;

function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === "/") end--;
  return url.slice(0, end);
}

/** `channels.matrix`: the homeserver, the bot account's access token (no login), and its user id. */
export const matrixSchema = z.strictObject({
  ...channelAccessKeys,
  homeserverUrl: z.string().url().transform(withoutTrailingSlashes).optional(),
  accessToken: z.string().min(1).optional(),
  /** The bot's user id (`@magpie:example.org`); whoami tells it when left out. */
  userId: z
    .string()
    .regex(/^@[^:]+:.+$/, "a Matrix user id like @magpie:example.org")
    .optional(),
});

export type MatrixConfig = z.infer<typeof matrixSchema>;

/** How long the homeserver may hold one /sync (long poll), in seconds. */
export const MATRIX_SYNC_SECS = 30;

/** Matrix in the channel catalog. */
export const matrixChannel = defineChannel({
  name: "matrix",
  label: "Matrix",
  schema: matrixSchema,
  env: [{ env: "MATRIX_ACCESS_TOKEN", key: "accessToken" }],
  secrets: ["accessToken"],
  // Synapse's default max_upload_size is 50 MB; pictures go as m.image up to the same size.
  uploads: { photo: 50 * MB, document: 50 * MB },
  pairing: true,
  buttons: true,
  edits: true,
  // A /sync returns within its timeout even when nothing happens: silent past it plus a margin is down.
  liveness: (section) => livenessLimit(section, MATRIX_SYNC_SECS + 15),
  isEnabled: (section) => section.enabled ?? Boolean(section.accessToken && section.homeserverUrl),
  configProblems: (section) =>
    (section.enabled ?? Boolean(section.accessToken)) && !section.homeserverUrl
      ? [
          "channels.matrix.homeserverUrl: required — the homeserver's client URL, like https://matrix.example.org.",
        ]
      : [],
  doctor: async (section, probe) => [
    await credentialCheck("matrix", "MATRIX_ACCESS_TOKEN or channels.matrix.accessToken", async () => {
      const { status, body } = await probe(`${section.homeserverUrl}/_matrix/client/v3/account/whoami`, {
        headers: { authorization: `Bearer ${section.accessToken}` },
      });
      const answer = body as { user_id?: string; errcode?: string };
      return status === 200 ? `authorized as ${answer.user_id}` : { status, error: answer.errcode };
    }),
  ],
  create: async (deps) => (await import("./matrix.js")).createMatrixChannel(deps),
});
