import type { OutboxOrigin } from "../store/outbox.js";
import type { OutboundMessage, ReplyTarget } from "./types.js";

/** Sends through the durable outbox (retries, exactly once). Returns the outbox id. */
export interface Messenger {
  send(target: ReplyTarget, message: OutboundMessage, origin?: OutboxOrigin): number;
  /** Resolves when the outbox item is sent or finally failed ("pending" if `timeoutMs` passes first). */
  waitForDelivery(outboxId: number, timeoutMs: number): Promise<"sent" | "failed" | "pending">;
}

/** Cross-channel messaging for the `message` tool: the outbox and the connected channels' names. */
export interface MessagingService {
  messenger: Messenger;
  channelNames(): string[];
}
