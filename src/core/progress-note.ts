import type { ChannelAdapter, ReplyTarget } from "./types.js";

/** How often at most an edited progress note follows what the turn is doing. */
const EDIT_INTERVAL_MS = 5_000;

/**
 * One "still working — <what is running>" note for a chat turn still running after `agent.progressNoticeSecs`
 * (DESIGN.md → Every message has an outcome): none for a quick turn; on a channel that can edit, the note then
 * follows what runs (throttled). Best-effort and sent straight through the adapter: it stands for nothing the
 * outbox must keep.
 */
export class ProgressNote {
  private activity = "waiting for the model";
  private messageId: string | undefined;
  private shown: string | undefined;
  private lastEdit = 0;
  private inFlight = false;
  private done = false;
  private readonly timer: NodeJS.Timeout | undefined;
  private editTimer: NodeJS.Timeout | undefined;
  private readonly editIntervalMs: number;

  constructor(
    private readonly adapter: ChannelAdapter | undefined,
    private readonly target: ReplyTarget,
    delaySecs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.editIntervalMs = Math.min(EDIT_INTERVAL_MS, delaySecs * 1000);
    if (!adapter || delaySecs <= 0) return;
    this.timer = setTimeout(() => void this.show(), delaySecs * 1000);
    this.timer.unref();
  }

  /** What the turn is doing now ("running web_fetch", "waiting for the model"). */
  set(activity: string): void {
    this.activity = activity;
    if (this.done || !this.messageId) return;
    if (!this.adapter?.capabilities.edit || !this.adapter.edit || this.editTimer) return;
    // Throttled, but the last activity always shows: the edit waits for the interval to pass.
    const wait = Math.max(0, this.lastEdit + this.editIntervalMs - this.now());
    this.editTimer = setTimeout(() => {
      this.editTimer = undefined;
      void this.show();
    }, wait);
    this.editTimer.unref();
  }

  /** The turn ended: no note after this. */
  stop(): void {
    this.done = true;
    clearTimeout(this.timer);
    clearTimeout(this.editTimer);
  }

  private async show(): Promise<void> {
    const adapter = this.adapter;
    if (this.done || !adapter || this.inFlight) return;
    const text = `still working — ${this.activity}`;
    if (text === this.shown) return;
    this.inFlight = true;
    this.lastEdit = this.now();
    try {
      if (this.messageId) {
        await adapter.edit?.(this.target, this.messageId, { text, format: "plain" });
      } else {
        const result = await adapter.send(this.target, { text, format: "plain" });
        this.messageId = result.messageIds[0];
      }
      this.shown = text;
    } catch {
      // A progress note is a courtesy: the reply still comes through the outbox.
    } finally {
      this.inFlight = false;
    }
  }
}
