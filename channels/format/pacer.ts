/**
 * Keeps outbound traffic within a platform's published limits with sliding windows: one overall, one per
 * chat. `wait(chatKey)` resolves when one more message may go out. Disabled pacing resolves at once.
 */

export interface PacingWindow {
  max: number;
  perMs: number;
}

export interface PacerOptions {
  overall?: PacingWindow;
  /** Window for a chat, chosen per chat (e.g. groups stricter than DMs); undefined = no per-chat limit. */
  perChat?: (chatKey: string) => PacingWindow | undefined;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Pacer {
  private readonly overallSends: number[] = [];
  private readonly chatSends = new Map<string, number[]>();
  private queue: Promise<void> = Promise.resolve();
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: PacerOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? defaultSleep;
  }

  /** Resolves when a message to `chatKey` may be sent, and counts it. Calls are served in order. */
  wait(chatKey: string): Promise<void> {
    const turn = this.queue.then(() => this.take(chatKey));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async take(chatKey: string): Promise<void> {
    const chatWindow = this.options.perChat?.(chatKey);
    let chatSends = this.chatSends.get(chatKey);
    if (chatWindow && !chatSends) {
      chatSends = [];
      this.chatSends.set(chatKey, chatSends);
    }
    for (;;) {
      const delay = Math.max(
        delayFor(this.overallSends, this.options.overall, this.now()),
        chatSends ? delayFor(chatSends, chatWindow, this.now()) : 0,
      );
      if (delay <= 0) break;
      await this.sleep(delay);
    }
    const at = this.now();
    this.overallSends.push(at);
    chatSends?.push(at);
  }
}

/** How long until the window has room; prunes timestamps that left the window. */
function delayFor(sends: number[], window: PacingWindow | undefined, now: number): number {
  if (!window) return 0;
  while (sends.length > 0 && sends[0]! <= now - window.perMs) sends.shift();
  if (sends.length < window.max) return 0;
  return sends[0]! + window.perMs - now;
}

/** Telegram's published limits: ~30 messages/s overall, 20/min in a group (negative chat ids). */
export function telegramPacer(): Pacer {
  return new Pacer({
    overall: { max: 30, perMs: 1000 },
    perChat: (chatId) => (chatId.startsWith("-") ? { max: 20, perMs: 60_000 } : { max: 1, perMs: 1000 / 3 }),
  });
}
