import { z } from "zod";
import { channelAccessKeys } from "../src/config/sections/channel-access.js";
import { errorMessage } from "../src/lib/errors.js";
import { defineChannel } from "./channel-entry.js";
import { livenessLimit } from "./liveness.js";

const MB = 1024 * 1024;

/** One mail server's connection (IMAP in, SMTP out). */
const mailServerSchema = z.strictObject({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65_535).optional(),
  /** TLS from the first byte (993/465); false speaks plain (STARTTLS when offered). Default: by port. */
  secure: z.boolean().optional(),
  user: z.string().min(1),
  password: z.string().min(1).optional(),
});

/** `channels.email`: the bot's address, its IMAP and SMTP servers, and the Authentication-Results rule. */
export const emailSchema = z.strictObject({
  ...channelAccessKeys,
  /** The bot's own address: the From of its replies; mail from it is never answered (no loops). */
  address: z.string().email().optional(),
  imap: mailServerSchema.optional(),
  smtp: mailServerSchema.optional(),
  mailbox: z.string().min(1).default("INBOX"),
  /** The authserv-id the receiving server writes into Authentication-Results (e.g. mx.google.com). */
  authservId: z.string().min(1).optional(),
  /** Trusts From without Authentication-Results: only for a closed server that takes no outside mail. */
  allowUnauthenticated: z.boolean().default(false),
  /** Inbound mails larger than this are answered from their headers only, attachments left on the server. */
  maxMailBytes: z
    .number()
    .int()
    .positive()
    .default(25 * MB),
});

/** `channels.email` once validated. */
export type EmailConfig = z.output<typeof emailSchema>;

/** E-mail in the channel catalog. */
/** How often the IMAP connection is proven alive with a NOOP (IDLE says nothing while no mail arrives), in seconds. */
export const EMAIL_NOOP_SECS = 200;

export const emailChannel = defineChannel({
  name: "email",
  label: "E-mail",
  // A chat id is the address mail goes to.
  chatIdProblem: (chatId) => {
    const at = chatId.indexOf("@");
    return at <= 0 || at === chatId.length - 1
      ? `"${chatId.slice(0, 80)}" is not an e-mail address — write "email:me@example.org".`
      : null;
  },
  schema: emailSchema,
  // One password for both servers is the common case (an app password); the file can set each apart.
  env: [
    { env: "EMAIL_PASSWORD", key: "imap.password" },
    { env: "EMAIL_PASSWORD", key: "smtp.password" },
  ],
  secrets: ["imap.password", "smtp.password"],
  // Most providers take 25 MB per mail, base64 included: 20 MB of file.
  uploads: { photo: 20 * MB, document: 20 * MB },
  pairing: true,
  buttons: false,
  edits: false,
  // IDLE is quiet while no mail comes: a NOOP every EMAIL_NOOP_SECS is the receive cycle, and a margin on top.
  liveness: (section) => livenessLimit(section, EMAIL_NOOP_SECS + 100),
  isEnabled: (section) => section.enabled ?? Boolean(section.address && section.imap && section.smtp),
  configProblems: (section) => {
    if (!(section.enabled ?? section.address)) return [];
    const missing = (["address", "imap", "smtp"] as const).filter((key) => !section[key]);
    return missing.map((key) => `channels.email.${key}: required when e-mail is enabled.`);
  },
  doctor: async (section) => {
    try {
      const { probeEmail } = await import("./email.js");
      return [{ name: "email", verdict: "ok", detail: await probeEmail(section) }];
    } catch (error) {
      return [
        {
          name: "email",
          verdict: "fail",
          detail: errorMessage(error),
          fix: "check channels.email.imap / .smtp host, port, user and EMAIL_PASSWORD",
        },
      ];
    }
  },
  create: async (deps) => (await import("./email.js")).createEmailChannel(deps),
});
