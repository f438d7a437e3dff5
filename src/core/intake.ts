import type { Logger } from "pino";
import { errorMessage } from "../lib/errors.js";
import { atomic } from "../store/atomic.js";
import type { Store } from "../store/index.js";
import type { OutboxOrigin } from "../store/outbox.js";
import type { AccessControl } from "./access.js";
import type { Clock } from "./clock.js";
import { type CommandRegistry, parseCommand } from "./commands.js";
import { type EventPublisher, NO_EVENTS } from "./events.js";
import type { AuthorityPort, SenderIdentity } from "./identity.js";
import { cutLongInbound } from "./inbound-size.js";
import { settleOutcome } from "./outcomes.js";
import { replyTargetOf, sessionKeyOf } from "./session-key.js";
import type {
  AcceptResult,
  ButtonHandler,
  ButtonPress,
  InboundMessage,
  InboundSender,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  ScreenVerdict,
} from "./types.js";

/**
 * Claims an accepted message before it is queued for a turn (a typed answer to a pending question); returns true
 * when the message was consumed.
 */
export type MessageInterceptor = (
  message: InboundMessage,
  sessionKey: string,
  sender: SenderIdentity,
) => boolean;

export interface IntakeOptions {
  store: Store;
  logger: Logger;
  clock: Clock;
  commands: CommandRegistry;
  /** The app's publisher on the core event stream (default: publishes nothing). */
  events?: EventPublisher;
  access: () => AccessControl;
  authority: () => AuthorityPort;
  buttonHandlers: () => readonly ButtonHandler[];
  interceptors: () => readonly MessageInterceptor[];
  /** Queues an inbox item for its session's next turn. */
  enqueue(sessionKey: string, inboxId: number): void;
  /** Puts a reply into the durable outbox. */
  send(target: ReplyTarget, message: OutboundMessage, origin: OutboxOrigin, inboxId?: number): number;
  /** Starts delivery of what was just written to the outbox. */
  wakeOutbox(): void;
  /** `agent.maxInboundChars` and the workspace the rest of a longer text goes to (no cut when unset). */
  inboundLimit?: { maxChars: number; workspace: string };
}

/**
 * Everything between an adapter and a turn: access control → inbox (dedupe) → slash commands, button presses,
 * answers to pending questions → the session's queue. Implements the adapters' InboundSink.
 */
export class Intake implements InboundSink {
  private readonly events: EventPublisher;

  constructor(private readonly options: IntakeOptions) {
    this.events = options.events ?? NO_EVENTS;
  }

  async message(inbound: InboundMessage): Promise<AcceptResult> {
    const { store, logger } = this.options;
    const decision = await this.options.access().check(inbound);
    // The verdict's metadata only: a stranger's text is never kept.
    this.events.accessDecided({
      channel: inbound.channel,
      chatId: inbound.chatId,
      messageId: inbound.messageId,
      userId: inbound.userId,
      verdict: decision.allow ? "allowed" : decision.reply ? "pairing" : "refused",
      ...(decision.allow ? {} : { reason: decision.reason }),
    });
    if (!decision.allow) {
      logger.debug(
        { channel: inbound.channel, chatId: inbound.chatId, reason: decision.reason },
        "message-denied",
      );
      if (decision.reply)
        this.options.send(replyTargetOf(inbound), { text: decision.reply, format: "plain" }, "pairing");
      return { status: "denied", reason: decision.reason };
    }
    // A note is Magpie's own; nobody can send one in through a channel.
    const { note: _note, ...whole } = inbound;
    const limit = this.options.inboundLimit;
    const message = limit ? cutLongInbound(whole, limit.maxChars, limit.workspace) : whole;
    const sessionKey = sessionKeyOf(message);
    const command = parseCommand(message.text);
    const inboxId = store.inbox.insert(message, sessionKey, command ? "processing" : "pending");
    if (inboxId === null) {
      logger.debug({ channel: message.channel, messageId: message.messageId }, "message-duplicate");
      return { status: "duplicate" };
    }
    logger.debug({ session: sessionKey, inboxId, command: command?.name }, "message-received");
    this.events.messageReceived({
      inboxId,
      channel: message.channel,
      chatId: message.chatId,
      messageId: message.messageId,
      sessionKey,
      userId: message.userId,
      textChars: message.text.length,
    });
    const sender = this.identify(message.channel, message.userId, message.userName);
    if (command) await this.runCommand(inboxId, message, sessionKey, command, sender);
    else if (this.intercepted(message, sessionKey, sender)) {
      store.inbox.setStatus([inboxId], "done", this.options.clock.now());
      settleOutcome(store, this.events, [inboxId], "answered");
    } else this.options.enqueue(sessionKey, inboxId);
    return { status: "accepted", inboxId };
  }

  /** Access control's verdict on a sender, from the envelope alone (see InboundSink.screen). */
  screen(sender: InboundSender): ScreenVerdict {
    return this.options.access().screen?.(sender) ?? "allowed";
  }

  async buttonPressed(press: ButtonPress): Promise<void> {
    if (this.options.access().allowsPress?.(press) === false) {
      this.options.logger.debug({ channel: press.channel, chatId: press.chatId }, "button-press-denied");
      return;
    }
    for (const handler of this.options.buttonHandlers()) {
      try {
        if (await handler(press)) return;
      } catch (error) {
        this.options.logger.warn({ err: error, button: press.buttonId }, "button-handler-failed");
      }
    }
    this.options.logger.debug({ button: press.buttonId }, "button-unclaimed");
  }

  /** The sender with their role on the channel (owner or guest), from the one authority. */
  identify(channel: string, userId: string, userName?: string): SenderIdentity {
    return {
      channel,
      userId,
      ...(userName ? { userName } : {}),
      role: this.options.authority().roleOf(channel, userId),
    };
  }

  private intercepted(message: InboundMessage, sessionKey: string, sender: SenderIdentity): boolean {
    for (const interceptor of this.options.interceptors()) {
      try {
        if (interceptor(message, sessionKey, sender)) return true;
      } catch (error) {
        this.options.logger.warn({ err: error }, "message-interceptor-failed");
      }
    }
    return false;
  }

  private async runCommand(
    inboxId: number,
    inbound: InboundMessage,
    sessionKey: string,
    command: { name: string; args: string },
    sender: SenderIdentity,
  ): Promise<void> {
    const { store, logger, commands, clock } = this.options;
    const target = replyTargetOf(inbound);
    const handler = commands.get(command.name);
    let reply: string | OutboundMessage;
    try {
      if (handler && sender.role !== "owner" && commands.isOwnerOnly(command.name)) {
        reply = `Only an owner can use /${command.name}.`;
        this.auditRefusal(sessionKey, sender, `/${command.name}`, command.args, "command.owner_only");
      } else {
        reply = handler
          ? await handler.run({ message: inbound, sender, sessionKey, args: command.args, target })
          : `Unknown command /${command.name}. Send /help for the list.`;
      }
    } catch (error) {
      logger.warn({ err: error, command: command.name }, "command-failed");
      reply = `/${command.name} failed: ${errorMessage(error)}`;
    }
    const message = typeof reply === "string" ? { text: reply } : reply;
    atomic(store.db, () => {
      if (message.text)
        store.outbox.enqueue(target, message, { origin: "command", inboxId, at: clock.now() });
      store.inbox.setStatus([inboxId], "done", clock.now());
      settleOutcome(store, this.events, [inboxId], "answered");
    });
    this.options.wakeOutbox();
  }

  /** Records a refused command in the audit log. */
  private auditRefusal(
    sessionKey: string,
    sender: SenderIdentity,
    action: string,
    args: string,
    code: string,
  ): void {
    try {
      this.options.store.audit.record({
        sessionKey,
        sender: `${sender.channel}:${sender.userId} (${sender.role})`,
        tool: action,
        arguments: JSON.stringify({ args: args.slice(0, 200), sender: `${sender.channel}:${sender.userId}` }),
        verdict: "deny",
        outcome: "denied",
        errorCode: code,
        durationMs: 0,
        at: this.options.clock.now(),
      });
    } catch (error) {
      this.options.logger.error({ err: error }, "audit-write-failed");
    }
  }
}
