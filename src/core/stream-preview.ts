import type { ChannelAdapter, ReplyTarget } from "./types.js";

/**
 * Shows a reply while it streams by sending a draft and editing it (throttled). Best-effort: the final answer
 * still goes through the outbox, which edits the draft into the formatted text.
 */
export class StreamPreview {
  private text = "";
  private messageId: string | undefined;
  private lastEdit = 0;
  private inFlight: Promise<void> | null = null;
  private failed = false;

  constructor(
    private readonly adapter: ChannelAdapter,
    private readonly target: ReplyTarget,
    private readonly intervalMs = 1_500,
    private readonly minChars = 40,
  ) {}

  push(delta: string): void {
    this.text += delta;
    if (this.failed || this.inFlight) return;
    const now = Date.now();
    if (!this.messageId && this.text.length < this.minChars) return;
    if (this.messageId && now - this.lastEdit < this.intervalMs) return;
    this.lastEdit = now;
    const snapshot = `${this.text} …`;
    this.inFlight = this.update(snapshot)
      .catch(() => {
        this.failed = true;
      })
      .finally(() => {
        this.inFlight = null;
      });
  }

  /** Waits for a pending draft update; returns the draft's platform id, if one was sent. */
  async finish(): Promise<string | undefined> {
    if (this.inFlight) await this.inFlight;
    return this.failed ? undefined : this.messageId;
  }

  private async update(snapshot: string): Promise<void> {
    const message = { text: snapshot, format: "plain" as const };
    if (!this.messageId) {
      const result = await this.adapter.send(this.target, message);
      this.messageId = result.messageIds[0];
    } else {
      await this.adapter.edit?.(this.target, this.messageId, message);
    }
  }
}
