import type { ChannelState, ChannelStatus } from "../src/core/types.js";

/** Tracks a channel's connection state for /readyz; `since` changes only when the state does. */
export class StatusTracker {
  private current: ChannelStatus = { state: "starting", since: Date.now() };

  set(state: ChannelState, detail?: string): void {
    if (state === this.current.state && detail === this.current.detail) return;
    this.current = { state, detail, since: state === this.current.state ? this.current.since : Date.now() };
  }

  get(): ChannelStatus {
    return this.current;
  }
}

/** Exponential back-off with jitter for reconnect attempts: 1 s, 2 s, 4 s … capped at `maxMs`. */
export function backoffDelay(attempt: number, baseMs = 1000, maxMs = 60_000): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.round(exponential * (0.8 + Math.random() * 0.4));
}

/** Short callback ids for platforms that cap them (Telegram: 64 bytes); long ids go through a map. */
export class ButtonIdMap {
  private readonly longIds = new Map<string, string>();
  private counter = 0;

  constructor(private readonly maxBytes: number) {}

  encode(buttonId: string): string {
    if (Buffer.byteLength(buttonId) <= this.maxBytes && !buttonId.startsWith("~")) return buttonId;
    const key = `~${(this.counter++).toString(36)}`;
    this.longIds.set(key, buttonId);
    if (this.longIds.size > 1000) this.longIds.delete(this.longIds.keys().next().value!);
    return key;
  }

  decode(data: string): string {
    return this.longIds.get(data) ?? data;
  }
}
