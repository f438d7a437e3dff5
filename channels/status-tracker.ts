import type { ChannelState, ChannelStatus } from "../src/core/types.js";

/** Tracks a channel's connection state for /readyz; `since` changes only when the state does. */
export class StatusTracker {
  private current: ChannelStatus = { state: "starting", since: Date.now() };

  set(state: ChannelState, detail?: string): void {
    if (state === this.current.state && detail === this.current.detail) return;
    this.current = {
      state,
      detail,
      since: state === this.current.state ? this.current.since : Date.now(),
      lastReceiveAt: this.current.lastReceiveAt,
    };
  }

  /** A receive cycle completed (inbound liveness): the channel is connected, and `lastReceiveAt` is now. */
  received(): void {
    this.set("connected");
    this.current = { ...this.current, lastReceiveAt: Date.now() };
  }

  get(): ChannelStatus {
    return this.current;
  }
}
