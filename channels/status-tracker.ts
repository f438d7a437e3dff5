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
