import diagnostics from "node:diagnostics_channel";
import type { App, Receiver, ReceiverEvent } from "@slack/bolt";
import { SocketModeClient } from "@slack/socket-mode";
import type { Logger } from "pino";
import { backoffDelay } from "./backoff.js";

export interface SocketReceiverOptions {
  appToken: string;
  /** WebClient options for `apps.connections.open` (the redirect `slackApiUrl`, no retries). */
  clientOptions: Record<string, unknown>;
  logger: Logger;
  onState(state: "connected" | "reconnecting", detail?: string): void;
  /** A ping or pong came over the socket: a completed receive cycle (inbound liveness). */
  onReceive(): void;
  clientPingTimeoutMs?: number;
}

/**
 * A Bolt receiver for Socket Mode that differs from Bolt's own in two ways Magpie needs: the envelope is
 * acknowledged only after the app finished processing it (so the inbox write happens before Slack
 * forgets the event), and lost connections are re-opened by this receiver with exponential back-off —
 * the socket-mode client's own reconnect gives up for good on a network error.
 */
export class AckAfterProcessingSocketReceiver implements Receiver {
  private app: App | null = null;
  private readonly client: SocketModeClient;
  private stopping = false;
  private attempt = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  /**
   * The socket-mode client pings Slack every few seconds and Slack pings back; undici publishes each frame on these
   * diagnostics channels (the client itself watches them). They carry every undici WebSocket's frames, and the
   * client's socket is private: a frame counts while this client's socket is open (Magpie runs one Slack socket).
   */
  private readonly onFrame = () => {
    if (this.open && !this.stopping) this.options.onReceive();
  };
  private open = false;

  constructor(private readonly options: SocketReceiverOptions) {
    this.client = new SocketModeClient({
      appToken: options.appToken,
      clientOptions: options.clientOptions,
      autoReconnectEnabled: false,
      clientPingTimeout: options.clientPingTimeoutMs,
      logLevel: undefined,
      logger: quietLogger(options.logger),
    });
    this.client.on(
      "slack_event",
      async (args: {
        ack: (response?: unknown) => Promise<void>;
        body: Record<string, unknown>;
        retry_num?: number;
        retry_reason?: string;
      }) => {
        let response: unknown;
        const event: ReceiverEvent = {
          body: args.body,
          retryNum: args.retry_num,
          retryReason: args.retry_reason,
          customProperties: {},
          ack: async (payload?: unknown) => {
            response = payload;
          },
        };
        try {
          await this.app?.processEvent(event);
        } catch (error) {
          // Not acknowledged: Slack redelivers the event.
          options.logger.error(
            { channel: "slack", err: String(error) },
            "slack event processing failed; not acknowledged",
          );
          return;
        }
        await args.ack(response).catch(() => undefined);
      },
    );
    this.client.on("connected", () => {
      this.open = true;
    });
    this.client.on("disconnected", () => {
      this.open = false;
      this.scheduleReconnect("socket closed");
    });
    diagnostics.subscribe("undici:websocket:pong", this.onFrame);
    diagnostics.subscribe("undici:websocket:ping", this.onFrame);
  }

  /** The socket answered nothing within the liveness limit: close it; the close opens a fresh one. */
  reconnect(reason: string): void {
    if (this.stopping) return;
    this.options.onState("reconnecting", reason);
    this.client.disconnect().catch(() => this.scheduleReconnect(reason));
  }

  init(app: App): void {
    this.app = app;
  }

  /** Connects; an auth error rejects (no retry), anything else is retried in the background. */
  async start(): Promise<void> {
    this.stopping = false;
    await this.client.start();
    this.attempt = 0;
    this.options.onState("connected");
  }

  /** Keeps trying in the background after a start-up failure that was not an auth error. */
  retryInBackground(reason: string): void {
    this.scheduleReconnect(reason);
  }

  private scheduleReconnect(reason: string): void {
    if (this.stopping || this.retryTimer) return;
    this.options.onState("reconnecting", `Socket Mode ${reason}; reconnecting`);
    const delay = backoffDelay(this.attempt++, 500, 30_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.stopping) return;
      this.client
        .start()
        .then(() => {
          this.attempt = 0;
          this.options.onState("connected");
        })
        .catch((error: unknown) => this.scheduleReconnect(`reconnect failed (${String(error)})`));
    }, delay);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.open = false;
    diagnostics.unsubscribe("undici:websocket:pong", this.onFrame);
    diagnostics.unsubscribe("undici:websocket:ping", this.onFrame);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    await this.client.disconnect().catch(() => undefined);
  }
}

/** Routes the socket-mode client's chatter to pino at debug level (it logs every reconnect as error). */
function quietLogger(logger: Logger) {
  let level = "debug";
  return {
    debug: (...messages: unknown[]) => logger.debug({ channel: "slack" }, messages.join(" ")),
    info: (...messages: unknown[]) => logger.debug({ channel: "slack" }, messages.join(" ")),
    warn: (...messages: unknown[]) => logger.debug({ channel: "slack" }, messages.join(" ")),
    error: (...messages: unknown[]) => logger.debug({ channel: "slack" }, messages.join(" ")),
    setLevel: (next: string) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  } as never;
}
