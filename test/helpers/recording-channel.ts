import type {
  ButtonPress,
  ChannelAdapter,
  ChannelCapabilities,
  ChannelStatus,
  InboundMessage,
  InboundSink,
  OutboundMessage,
  ReplyTarget,
  SendProgress,
  SendResult,
} from "../../src/core/types.js";

export interface SentMessage {
  target: ReplyTarget;
  message: OutboundMessage;
  id: string;
}

/**
 * An in-memory channel for core tests (the chat platforms have protocol fakes in test/fakes/). Records every
 * send; `failNext` makes the next sends throw.
 */
export class RecordingChannel implements ChannelAdapter {
  readonly capabilities: ChannelCapabilities;
  readonly sent: SentMessage[] = [];
  readonly edits: Array<{ messageId: string; message: OutboundMessage }> = [];
  typingCount = 0;
  private sink: InboundSink | undefined;
  private counter = 0;
  private failures: Error[] = [];
  private waiters: Array<() => void> = [];
  private state: ChannelStatus = { state: "starting", since: Date.now() };

  constructor(
    readonly name = "test",
    capabilities: Partial<ChannelCapabilities> = {},
  ) {
    this.capabilities = {
      maxMessageLength: 4096,
      edit: false,
      buttons: true,
      typing: true,
      threads: false,
      ...capabilities,
    };
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.state = { state: "connected", since: Date.now() };
  }

  async send(target: ReplyTarget, message: OutboundMessage, progress?: SendProgress): Promise<SendResult> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    const id = `m${++this.counter}`;
    if ((progress?.partsSent ?? 0) === 0) {
      this.sent.push({ target, message, id });
      progress?.onPartSent(0, id);
    }
    for (const wake of this.waiters.splice(0)) wake();
    return { messageIds: [id] };
  }

  async edit(_target: ReplyTarget, messageId: string, message: OutboundMessage): Promise<void> {
    this.edits.push({ messageId, message });
  }

  async typing(): Promise<void> {
    this.typingCount++;
  }

  async stop(): Promise<void> {
    this.state = { state: "stopped", since: Date.now() };
  }

  status(): ChannelStatus {
    return this.state;
  }

  /** The next `count` sends throw `error`. */
  failNext(error: Error, count = 1): void {
    for (let i = 0; i < count; i++) this.failures.push(error);
  }

  /** Delivers an inbound message as the platform would. */
  async receive(text: string, overrides: Partial<InboundMessage> = {}): ReturnType<InboundSink["message"]> {
    if (!this.sink) throw new Error("RecordingChannel not started");
    const id = ++this.counter;
    return this.sink.message({
      channel: this.name,
      chatId: "chat-1",
      messageId: `in-${id}`,
      userId: "user-1",
      userName: "Owner",
      text,
      isDirect: true,
      mentionsBot: false,
      attachments: [],
      receivedAt: Date.now(),
      ...overrides,
    });
  }

  async press(press: Partial<ButtonPress> & { buttonId: string }): Promise<void> {
    await this.sink?.buttonPressed({
      channel: this.name,
      chatId: "chat-1",
      userId: "user-1",
      userName: "Owner",
      isDirect: true,
      ...press,
    });
  }

  /** Resolves once at least `count` messages were sent (rejects after `timeoutMs`). */
  async waitForSent(count: number, timeoutMs = 5_000): Promise<SentMessage[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.sent.length < count) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(
          `expected ${count} sent message(s), got ${this.sent.length}: ${JSON.stringify(this.sent.map((s) => s.message.text))}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(remaining, 50));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.sent;
  }

  texts(): string[] {
    return this.sent.map((entry) => entry.message.text);
  }
}
