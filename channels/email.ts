import { ImapFlow } from "imapflow";
import nodemailer, { type Transporter } from "nodemailer";
import { z } from "zod";
import type {
  Attachment,
  AttachmentKind,
  Button,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundMessage,
  InboundSender,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../src/core/types.js";
import { ChannelSendError, errorMessage, MagpieError } from "../src/lib/errors.js";
import { backoffDelay } from "./backoff.js";
import type { ChannelDeps } from "./channel-deps.js";
import { verifySender } from "./email-auth.js";
import { parseMail, readMailBody } from "./email-body.js";
import { EMAIL_NOOP_SECS, type EmailConfig } from "./email-entry.js";
import {
  ENVELOPE_FIELDS,
  MAX_REFERENCES,
  type MailEnvelope,
  readEnvelope,
  stripRe,
} from "./email-envelope.js";
import { renderMarkdown } from "./format/markdown.js";
import { livenessLimit, receiveCycleSecs } from "./liveness.js";
import { readOutboundFile, sendParts } from "./send-parts.js";
import { StatusTracker } from "./status-tracker.js";

const PASSWORD_HINT = "Check EMAIL_PASSWORD or channels.email.imap.password / channels.email.smtp.password.";
/** A mail has no length limit worth chunking at; this only keeps one reply a sane size. */
const LIMIT = 30_000;
/** What most providers accept per mail (Gmail 25 MB); a bigger file is refused before SMTP refuses it. */
const MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;
/** Prefix of the user id of a sender whose From could not be verified (never an allowlisted address). */
export const UNVERIFIED_PREFIX = "unverified:";

type MailServer = NonNullable<EmailConfig["imap"]>;

/** Where the adapter left the mailbox: UIDs are only meaningful with the UIDVALIDITY they were read under. */
const mailboxCursorSchema = z.object({ uidValidity: z.string(), lastUid: z.number(), lastAt: z.number() });
const threadStateSchema = z.object({ subject: z.string(), references: z.array(z.string()) });

interface MailboxCursor {
  uidValidity: string;
  lastUid: number;
  /** Epoch ms of the last mail handled; after a UIDVALIDITY change, older mail is not looked at again. */
  lastAt: number;
}

/** A thread's subject and references, kept so a reply threads (In-Reply-To, References, "Re: "). */
interface ThreadState {
  subject: string;
  references: string[];
}

/** The port a server listens on when config leaves it out: TLS ports unless `secure` is false. */
function portOf(server: MailServer, tlsPort: number, plainPort: number): number {
  return server.port ?? (server.secure === false ? plainPort : tlsPort);
}

function kindOf(mime: string): AttachmentKind {
  if (mime.startsWith("image/")) return "image";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  return "file";
}

/** The text handed on: the subject above the body, unless it is a reply's "Re: …" or one of them is empty. */
function textOf(subject: string, body: string): string {
  return subject && !/^re:/i.test(subject) && body ? `${subject}\n\n${body}` : body || subject;
}

/** Markdown as the HTML part: the Telegram dialect's tags are plain HTML; line breaks kept by CSS. */
function htmlOf(markdown: string): string {
  return `<div style="white-space: pre-wrap; font-family: sans-serif">${renderMarkdown(markdown, "telegram-html")}</div>`;
}

/** Buttons as numbered lines: the correspondent answers with the number. */
function numbered(buttons: Button[][]): string {
  const lines = buttons.flat().map((button, index) => `${index + 1}. ${button.label}`);
  return `\n\n${lines.join("\n")}\n\nReply with the number of your choice.`;
}

/** The first line of a reply, without the quoted original most clients add below it. */
function firstAnswerLine(text: string): string {
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed) return trimmed;
  }
  return "";
}

/** E-mail: new mail in `mailbox` over IMAP (IDLE), replies over SMTP; a chat is a correspondent's address. */
export class EmailChannel implements ChannelAdapter {
  readonly name = "email";
  readonly capabilities: ChannelCapabilities = {
    maxMessageLength: LIMIT,
    edit: false,
    buttons: false,
    typing: false,
    threads: true,
    messageNoun: "mail",
  };
  private readonly config: EmailConfig;
  private readonly address: string;
  private readonly imapServer: MailServer;
  private readonly transport: Transporter;
  private readonly status$ = new StatusTracker();
  private client: ImapFlow | null = null;
  /** The client being connected (a server that stopped answering holds it at the greeting): reconnect drops it. */
  private connecting: ImapFlow | null = null;
  private sink: InboundSink | null = null;
  private stopped = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /** The NOOP round that proves the connection alive (inbound liveness). */
  private noopTimer: NodeJS.Timeout | null = null;
  private readonly noopMs: number;
  /** One mailbox scan at a time; a new-mail signal during a scan runs one more scan after it. */
  private scanning: Promise<void> = Promise.resolve();
  private rescan = false;
  /** The numbered choices last sent to each chat, so a reply "2" presses the second button. */
  private readonly choices = new Map<string, { ids: string[]; messageId: string }>();

  constructor(private readonly deps: ChannelDeps) {
    this.config = deps.config.channels.email;
    const { address, imap, smtp } = this.config;
    if (!address || !imap || !smtp) {
      throw new MagpieError(
        "channel.email.incomplete",
        "E-mail is enabled but channels.email needs address, imap {host, user, password} and smtp {host, user, password}.",
      );
    }
    if (!imap.password || !smtp.password) {
      throw new MagpieError("channel.email.no_password", `E-mail has no password. ${PASSWORD_HINT}`);
    }
    this.address = address.toLowerCase();
    this.noopMs = 1000 * receiveCycleSecs(livenessLimit(this.config, EMAIL_NOOP_SECS + 100), EMAIL_NOOP_SECS);
    this.imapServer = imap;
    const port = portOf(smtp, 465, 587);
    this.transport = nodemailer.createTransport({
      host: smtp.host,
      port,
      secure: smtp.secure ?? port === 465,
      auth: { user: smtp.user, pass: smtp.password },
    });
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.stopped = false;
    try {
      await this.connect();
    } catch (error) {
      if (isAuthFailure(error)) {
        this.status$.set("failed", "IMAP login refused");
        throw new MagpieError("channel.email.auth", `The IMAP server refused the login. ${PASSWORD_HINT}`, {
          cause: error,
        });
      }
      this.status$.set("reconnecting", `IMAP connection failed: ${errorMessage(error)}`);
      this.scheduleReconnect();
    }
  }

  /**
   * The connection answered no NOOP within the liveness limit (a server that keeps the socket but has stopped
   * answering): drop it; its close starts a fresh connection. A connection attempt the silence holds (no
   * greeting yet) is dropped the same way: its failure schedules the next one.
   */
  reconnect(reason: string): void {
    const client = this.client ?? this.connecting;
    if (this.stopped || !client) return;
    this.status$.set("reconnecting", reason);
    this.deps.logger.warn({ channel: this.name, reason }, "imap connection silent; reconnecting");
    client.close();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.noopTimer) clearInterval(this.noopTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const client = this.client;
    this.client = null;
    if (client) await client.logout().catch(() => client.close());
    this.transport.close();
    this.status$.set("stopped");
  }

  status(): ChannelStatus {
    return this.status$.get();
  }

  private imapClient(): ImapFlow {
    const server = this.imapServer;
    const port = portOf(server, 993, 143);
    return new ImapFlow({
      host: server.host,
      port,
      secure: server.secure ?? port === 993,
      auth: { user: server.user, pass: server.password ?? "" },
      logger: false,
      // IDLE (new-mail push) right after each command, not after imapflow's default 15 s of quiet.
      autoIdleDelay: 200,
    });
  }

  private async connect(): Promise<void> {
    const client = this.imapClient();
    client.on("error", (error: unknown) => {
      this.deps.logger.warn({ err: errorMessage(error) }, "imap connection error");
    });
    this.connecting = client;
    try {
      await client.connect();
      if (this.stopped) {
        await client.logout().catch(() => undefined);
        return;
      }
      await client.mailboxOpen(this.config.mailbox);
    } finally {
      if (this.connecting === client) this.connecting = null;
    }
    this.client = client;
    this.failures = 0;
    client.on("exists", () => this.requestScan());
    client.on("close", () => {
      if (this.client !== client || this.stopped) return;
      this.client = null;
      this.status$.set("reconnecting", "IMAP connection closed");
      this.scheduleReconnect();
    });
    this.status$.received();
    this.requestScan();
    this.startNoops(client);
  }

  /** A NOOP every cycle (one at a time): each answer is a completed receive cycle. */
  private startNoops(client: ImapFlow): void {
    if (this.noopTimer) clearInterval(this.noopTimer);
    let inFlight = false;
    this.noopTimer = setInterval(() => {
      if (inFlight || this.client !== client) return;
      inFlight = true;
      client
        .noop()
        .then(() => {
          if (this.client === client && !this.stopped) this.status$.received();
        })
        .catch((error: unknown) => this.deps.logger.warn({ err: errorMessage(error) }, "imap noop failed"))
        .finally(() => {
          inFlight = false;
        });
    }, this.noopMs);
    this.noopTimer.unref();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer) return;
    const delay = backoffDelay(this.failures++, 500, 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().catch((error: unknown) => {
        this.status$.set("reconnecting", `IMAP connection failed: ${errorMessage(error)}`);
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }

  /** Scans for new mail now, or once more after the scan that is running. */
  private requestScan(): void {
    if (this.rescan) return;
    this.rescan = true;
    this.scanning = this.scanning.then(async () => {
      this.rescan = false;
      const client = this.client;
      if (!client || this.stopped) return;
      await this.scan(client).catch((error: unknown) => {
        this.deps.logger.warn({ err: errorMessage(error) }, "mailbox scan failed");
      });
    });
  }

  private cursorKey(): string {
    return `channel.email.cursor:${this.imapServer.user}:${this.config.mailbox}`;
  }

  /**
   * Hands every mail newer than the stored cursor to the sink, advancing the cursor after each inbox write.
   * First start: the mail already there is old and left alone. A changed UIDVALIDITY (a rebuilt or restarted
   * server) invalidates every stored UID: mail since the last one handled is looked at again, and the inbox's
   * Message-ID dedupe keeps what was answered from being answered twice.
   */
  private async scan(client: ImapFlow): Promise<void> {
    const mailbox = client.mailbox;
    if (!mailbox) return;
    const uidValidity = String(mailbox.uidValidity);
    const stored = this.deps.store.kv.get(this.cursorKey(), mailboxCursorSchema);
    let uids: number[];
    if (!stored) {
      this.saveCursor({ uidValidity, lastUid: Math.max(0, mailbox.uidNext - 1), lastAt: Date.now() });
      return;
    }
    if (stored.uidValidity !== uidValidity) {
      const since = new Date(stored.lastAt - 24 * 3600_000);
      uids = (await client.search({ since }, { uid: true })) || [];
      this.saveCursor({ uidValidity, lastUid: 0, lastAt: stored.lastAt });
    } else {
      // uidNext is as of SELECT; new mail since then shows only in a search.
      uids = (await client.search({ uid: `${stored.lastUid + 1}:*` }, { uid: true })) || [];
      uids = uids.filter((uid) => uid > stored.lastUid);
    }
    uids.sort((a, b) => a - b);
    for (const uid of uids) {
      if (this.stopped || this.client !== client) return;
      try {
        await this.handle(client, uid, uidValidity);
      } catch (error) {
        // The connection is gone: this mail is looked at again after the reconnect.
        if (this.stopped || this.client !== client || !client.usable) return;
        // Anything else is this mail's own trouble: it is skipped, and every later mail still gets its turn.
        this.deps.logger.warn({ uid, err: errorMessage(error) }, "mail skipped: it could not be handled");
      }
      const current = this.deps.store.kv.get(this.cursorKey(), mailboxCursorSchema);
      this.saveCursor({
        uidValidity,
        lastUid: Math.max(uid, current?.lastUid ?? 0),
        lastAt: Math.max(Date.now(), current?.lastAt ?? 0),
      });
    }
  }

  private saveCursor(cursor: MailboxCursor): void {
    this.deps.store.kv.set(this.cursorKey(), cursor);
  }

  /**
   * One mail, judged by its envelope first (DESIGN.md → Security): the envelope and a few header fields decide who
   * sent it, and access control says what to make of that sender before the body is fetched. A stranger's mail is
   * handed on without its body — access control refuses it or answers with a pairing code — and is never fetched
   * or parsed. An allowed sender's mail is read; one that can't be (too big, too many parts, a broken header) is
   * handed on from its headers with a note saying so.
   */
  private async handle(client: ImapFlow, uid: number, uidValidity: string): Promise<void> {
    const head = await client.fetchOne(
      String(uid),
      { uid: true, size: true, headers: ENVELOPE_FIELDS },
      { uid: true },
    );
    const sink = this.sink;
    if (!head || !sink) return;
    const envelope = await readEnvelope(head.headers);
    if (!envelope.from || envelope.from === this.address || envelope.automatic) return;
    const sender = this.senderOf(envelope);
    const base = { envelope, sender, uid, uidValidity };
    if ((sink.screen?.(sender) ?? "allowed") !== "allowed") {
      await sink.message(this.inboundOf({ ...base, body: "(The body of this mail was not read.)" }));
      return;
    }
    const size = head.size ?? 0;
    if (size > this.config.maxMailBytes) {
      const note = `(This mail is ${size} bytes, over channels.email.maxMailBytes; only its headers were read.)`;
      await this.deliver(sink, this.inboundOf({ ...base, body: note }), envelope);
      return;
    }
    const fetched = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true });
    const source = fetched ? fetched.source : undefined;
    if (!source) return;
    const body = await readMailBody(source);
    if (!body.ok) {
      this.deps.logger.info(
        { uid, reason: body.reason },
        "mail could not be read: answered from its headers",
      );
      const note = `(This mail could not be read: ${body.reason}. Only its headers were.)`;
      await this.deliver(sink, this.inboundOf({ ...base, body: note }), envelope);
      return;
    }
    const attachments: Attachment[] = body.mail.attachments.map((attachment, index) => ({
      kind: kindOf(attachment.contentType),
      id: `${uidValidity}:${uid}:${index}`,
      name: attachment.filename,
      mime: attachment.contentType,
      size: attachment.size,
    }));
    await this.deliver(
      sink,
      this.inboundOf({ ...base, body: body.text, attachments, raw: body.mail }),
      envelope,
    );
  }

  /** Hands an allowed sender's mail on (a numbered answer presses its button) and keeps its thread for replies. */
  private async deliver(sink: InboundSink, inbound: InboundMessage, envelope: MailEnvelope): Promise<void> {
    const choice = this.choiceOf(inbound);
    if (choice) {
      await sink.buttonPressed(choice);
      return;
    }
    const accepted = await sink.message(inbound);
    if (accepted.status !== "accepted") return;
    this.deps.store.kv.set(this.threadKey(inbound.chatId, inbound.threadId!), {
      subject: stripRe(envelope.subject),
      references: [...envelope.references, inbound.messageId].slice(-MAX_REFERENCES),
    } satisfies ThreadState);
  }

  /** Who sent a mail: From, only when the receiving server's Authentication-Results vouch for it. */
  private senderOf(envelope: MailEnvelope): InboundSender {
    const verdict = this.config.allowUnauthenticated
      ? { verified: true, reason: "allowUnauthenticated" }
      : verifySender(envelope.from, envelope.authenticationResults, this.config.authservId);
    if (!verdict.verified) {
      this.deps.logger.info({ reason: verdict.reason }, "e-mail sender not verified: treated as a stranger");
    }
    return {
      channel: this.name,
      chatId: envelope.from,
      userId: verdict.verified ? envelope.from : `${UNVERIFIED_PREFIX}${envelope.from}`,
      userName: envelope.fromName,
      isDirect: true,
    };
  }

  private inboundOf(mail: {
    envelope: MailEnvelope;
    sender: InboundSender;
    uid: number;
    uidValidity: string;
    body: string;
    attachments?: Attachment[];
    raw?: unknown;
  }): InboundMessage {
    const { envelope, sender } = mail;
    const messageId = envelope.messageId ?? `<uid-${mail.uidValidity}-${mail.uid}@${this.imapServer.host}>`;
    const inReplyTo = envelope.inReplyTo;
    return {
      ...sender,
      threadId: envelope.references[0] ?? inReplyTo ?? messageId,
      messageId,
      text: textOf(envelope.subject, mail.body.trim()),
      mentionsBot: true,
      ...(inReplyTo ? { replyTo: { messageId: inReplyTo } } : {}),
      attachments: mail.attachments ?? [],
      receivedAt: Date.now(),
      raw: mail.raw ?? envelope,
    };
  }

  /** A short answer "2" to a mail that offered numbered choices is a button press. */
  private choiceOf(inbound: InboundMessage): Parameters<InboundSink["buttonPressed"]>[0] | null {
    const offered = this.choices.get(inbound.chatId);
    if (!offered || inbound.replyTo?.messageId !== offered.messageId) return null;
    const answer = firstAnswerLine(inbound.text.replace(/^re:[^\n]*\n/i, ""));
    if (!/^\d{1,2}\.?$/.test(answer)) return null;
    const buttonId = offered.ids[Number.parseInt(answer, 10) - 1];
    if (!buttonId) return null;
    this.choices.delete(inbound.chatId);
    return {
      channel: this.name,
      chatId: inbound.chatId,
      threadId: inbound.threadId,
      userId: inbound.userId,
      userName: inbound.userName,
      isDirect: true,
      buttonId,
      messageId: offered.messageId,
    };
  }

  private threadKey(chatId: string, threadId: string): string {
    return `channel.email.thread:${chatId}:${threadId}`;
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    const thread = target.threadId
      ? this.deps.store.kv.get(this.threadKey(target.chatId, target.threadId), threadStateSchema)
      : undefined;
    const references = thread?.references ?? (target.threadId ? [target.threadId] : []);
    const inReplyTo = target.replyToMessageId ?? references.at(-1);
    const subject = thread?.subject
      ? `Re: ${thread.subject}`
      : target.threadId
        ? "Re: your message"
        : "Magpie";
    const buttons = message.buttons;
    const text = buttons ? `${message.text}${numbered(buttons)}` : message.text;
    const plainOnly = message.format === "plain";
    const result = await sendParts(
      target,
      { ...message, text, buttons: undefined },
      {
        limit: LIMIT,
        // Parts are cut by their Markdown: a mail's HTML may be longer, no server counts it.
        render: (markdown) => markdown,
        markup: () => undefined,
        edit: async () => {
          throw new ChannelSendError("E-mail cannot be edited once sent.", { permanent: true });
        },
        post: (part) =>
          this.mail(target.chatId, subject, part.plain, plainOnly ? undefined : htmlOf(part.plain), {
            inReplyTo,
            references,
          }),
        postFile: async (file, caption) => {
          const bytes = await readOutboundFile(file);
          if (bytes.length > MAX_ATTACHMENT_BYTES) {
            throw new ChannelSendError(
              `${file.name} is over ${MAX_ATTACHMENT_BYTES} bytes, too big to mail.`,
              {
                code: "channel.file_too_large",
                permanent: true,
              },
            );
          }
          const body = caption?.plain ?? "";
          return this.mail(
            target.chatId,
            subject,
            body,
            body && !plainOnly ? htmlOf(body) : undefined,
            { inReplyTo, references },
            [{ filename: file.name, content: bytes, contentType: file.mime }],
          );
        },
        captionLimit: LIMIT,
      },
      progress,
    );
    const lastId = result.messageIds.at(-1);
    if (buttons && lastId) {
      this.choices.set(target.chatId, { ids: buttons.flat().map((button) => button.id), messageId: lastId });
    }
    if (target.threadId && lastId) {
      this.deps.store.kv.set(this.threadKey(target.chatId, target.threadId), {
        subject: thread?.subject ?? stripRe(subject),
        references: [...references, lastId].slice(-MAX_REFERENCES),
      } satisfies ThreadState);
    }
    return result;
  }

  private async mail(
    to: string,
    subject: string,
    text: string,
    html: string | undefined,
    thread: { inReplyTo?: string; references: string[] },
    attachments?: Array<{ filename: string; content: Buffer; contentType?: string }>,
  ): Promise<string> {
    try {
      const info = await this.transport.sendMail({
        from: this.config.address,
        to,
        subject,
        text,
        ...(html ? { html } : {}),
        ...(thread.inReplyTo ? { inReplyTo: thread.inReplyTo } : {}),
        ...(thread.references.length > 0 ? { references: thread.references } : {}),
        ...(attachments ? { attachments } : {}),
        headers: { "Auto-Submitted": "auto-replied" },
      });
      return String(info.messageId);
    } catch (error) {
      throw sendError(error);
    }
  }

  async download(attachment: Attachment): Promise<Buffer> {
    const [uidValidity, uid, index] = attachment.id.split(":");
    const client = this.client;
    if (!client?.mailbox || String(client.mailbox.uidValidity) !== uidValidity) {
      throw new MagpieError("channel.email.attachment_gone", `The mail holding ${attachment.name} is gone.`);
    }
    const fetched = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true });
    const source = fetched ? fetched.source : undefined;
    if (!source) {
      throw new MagpieError("channel.email.attachment_gone", `The mail holding ${attachment.name} is gone.`);
    }
    const mail = await parseMail(source).catch(() => null);
    const found = mail?.attachments[Number(index)];
    if (!found) {
      throw new MagpieError("channel.email.attachment_gone", `The mail holding ${attachment.name} is gone.`);
    }
    return found.content;
  }
}

function isAuthFailure(error: unknown): boolean {
  return typeof error === "object" && error !== null && "authenticationFailed" in error;
}

/** SMTP 4xx and network trouble are worth a retry; a 5xx refusal is permanent. */
function sendError(error: unknown): ChannelSendError {
  const responseCode = (error as { responseCode?: number }).responseCode;
  const permanent = typeof responseCode === "number" && responseCode >= 500;
  const auth = (error as { code?: string }).code === "EAUTH";
  return new ChannelSendError(
    auth ? `The SMTP server refused the login. ${PASSWORD_HINT}` : `SMTP: ${errorMessage(error)}`,
    {
      code: "channel.email.send_failed",
      permanent: permanent || auth,
      ...(responseCode && responseCode < 500 ? { retryAfterMs: 60_000 } : {}),
      cause: error,
    },
  );
}

/** Creates the e-mail adapter (loaded only when channels.email is enabled). */
export function createEmailChannel(deps: ChannelDeps): ChannelAdapter {
  return new EmailChannel(deps);
}

/** Doctor probe: logs in over IMAP and verifies the SMTP login, naming what failed. */
export async function probeEmail(config: EmailConfig): Promise<string> {
  const { imap, smtp } = config;
  if (!imap || !smtp) throw new Error("channels.email needs imap and smtp");
  const imapPort = portOf(imap, 993, 143);
  const client = new ImapFlow({
    host: imap.host,
    port: imapPort,
    secure: imap.secure ?? imapPort === 993,
    auth: { user: imap.user, pass: imap.password ?? "" },
    logger: false,
  });
  try {
    await client.connect();
    await client.mailboxOpen(config.mailbox);
  } catch (error) {
    throw new Error(`IMAP ${imap.host}:${imapPort}: ${errorMessage(error)}. ${PASSWORD_HINT}`);
  } finally {
    await client.logout().catch(() => client.close());
  }
  const smtpPort = portOf(smtp, 465, 587);
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtpPort,
    secure: smtp.secure ?? smtpPort === 465,
    auth: { user: smtp.user, pass: smtp.password },
  });
  try {
    await transport.verify();
  } catch (error) {
    throw new Error(`SMTP ${smtp.host}:${smtpPort}: ${errorMessage(error)}. ${PASSWORD_HINT}`);
  } finally {
    transport.close();
  }
  return `IMAP ${imap.host}:${imapPort} and SMTP ${smtp.host}:${smtpPort} logins work`;
}
