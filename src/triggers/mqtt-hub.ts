import { createHash, randomBytes } from "node:crypto";
import mqtt, { type MqttClient } from "mqtt";
import type { Logger } from "pino";

/** The broker settings (`mqtt` at top level, or a trigger's own `url`). */
export interface BrokerSettings {
  url: string;
  username?: string;
  password?: string;
}

/** One message as MQTT triggers see it. */
export interface MqttMessage {
  topic: string;
  payload: Buffer;
}

interface Broker {
  client: MqttClient;
  /** Topic filter → listeners. */
  filters: Map<string, Set<(message: MqttMessage) => void>>;
  /** Recent QoS 1 deliveries (message id + content): a redelivered one (DUP) is not run twice. */
  recent: Set<string>;
  connected: Promise<void>;
}

const FIRST_RETRY_MS = 1_000;
/** How long `mqtt_publish` waits for the broker. */
const PUBLISH_TIMEOUT_MS = 10_000;
const LONGEST_RETRY_MS = 60_000;
/** QoS 1 deliveries remembered for redelivery checks. */
const RECENT_KEPT = 1_000;
/** The largest MQTT payload a trigger reads (a sensor reading, not a file). */
export const MAX_MQTT_PAYLOAD = 256 * 1024;

/**
 * One MQTT connection per broker, shared by every trigger on it and by `mqtt_publish` (the `mqtt` package; this
 * module is loaded only with the trigger runtime). Subscriptions are QoS 1 in a persistent session (`clean: false`), so messages published
 * while Magpie was away arrive when it reconnects; reconnects back off from 1 s to 60 s.
 */
export class MqttHub {
  private readonly brokers = new Map<string, Broker>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly logger: Logger,
    /** Stable per install: the broker keeps the session (and what arrived meanwhile) under this id. */
    private readonly clientIdPrefix: string,
  ) {}

  /**
   * Subscribes `listener` to `filter` on the broker (connecting on first use, in the background: a broker that
   * is down never holds up start-up). Returns the unsubscribe; `settled()` waits for the broker's answer.
   */
  subscribe(settings: BrokerSettings, filter: string, listener: (message: MqttMessage) => void): () => void {
    let stopped = false;
    let stop = () => {};
    const subscribing = this.broker(settings).then(async (broker) => {
      if (stopped) return;
      let listeners = broker.filters.get(filter);
      const first = !listeners;
      listeners ??= new Set();
      broker.filters.set(filter, listeners);
      listeners.add(listener);
      stop = () => {
        const current = broker.filters.get(filter);
        current?.delete(listener);
        if (current && current.size === 0) {
          broker.filters.delete(filter);
          if (broker.client.connected) broker.client.unsubscribe(filter);
        }
      };
      // Sent now or, while the broker is away, on connecting (mqtt.js queues it).
      if (first) await broker.client.subscribeAsync(filter, { qos: 1 });
    });
    const tracked = subscribing
      .catch((error: unknown) => this.logger.error({ filter, err: error }, "mqtt-subscribe-failed"))
      .finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
    return () => {
      stopped = true;
      stop();
    };
  }

  /** Resolves when every subscription asked for so far has been answered (or failed). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Publishes one message; resolves when the broker took it (QoS 1/2) or it was written (QoS 0). */
  async publish(
    settings: BrokerSettings,
    topic: string,
    payload: string,
    options: { qos: 0 | 1 | 2; retain: boolean },
  ): Promise<void> {
    const broker = await this.broker(settings);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `the broker at ${redactUrl(settings.url)} did not take the message within ${PUBLISH_TIMEOUT_MS / 1000} s`,
            ),
          ),
        PUBLISH_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([
        broker.connected.then(() => broker.client.publishAsync(topic, payload, options)),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes every connection. */
  async close(): Promise<void> {
    const brokers = [...this.brokers.values()];
    this.brokers.clear();
    await Promise.all(brokers.map((broker) => broker.client.endAsync().catch(() => undefined)));
  }

  private async broker(settings: BrokerSettings): Promise<Broker> {
    const existing = this.brokers.get(settings.url);
    if (existing) return existing;
    const id = createHash("sha256")
      .update(`${this.clientIdPrefix}|${settings.url}`)
      .digest("hex")
      .slice(0, 12);
    const client = mqtt.connect(settings.url, {
      clientId: `magpie-${id}`,
      clean: false,
      reconnectPeriod: FIRST_RETRY_MS,
      connectTimeout: 10_000,
      resubscribe: true,
      ...(settings.username ? { username: settings.username } : {}),
      ...(settings.password ? { password: settings.password } : {}),
    });
    const connected = new Promise<void>((resolve) => client.once("connect", () => resolve()));
    const broker: Broker = { client, filters: new Map(), recent: new Set(), connected };
    this.brokers.set(settings.url, broker);
    client.on("connect", () => {
      client.options.reconnectPeriod = FIRST_RETRY_MS;
      this.logger.info({ broker: redactUrl(settings.url) }, "mqtt-connected");
    });
    client.on("offline", () => {
      // Back off: each failed reconnect waits twice as long, up to a minute.
      const period = client.options.reconnectPeriod ?? FIRST_RETRY_MS;
      client.options.reconnectPeriod = Math.min(period * 2, LONGEST_RETRY_MS);
      this.logger.warn({ broker: redactUrl(settings.url), retryMs: period }, "mqtt-offline");
    });
    client.on("error", (error) =>
      this.logger.warn({ broker: redactUrl(settings.url), err: error }, "mqtt-error"),
    );
    client.on("message", (topic, payload, packet) => {
      if (payload.length > MAX_MQTT_PAYLOAD) {
        this.logger.warn({ topic, bytes: payload.length }, "mqtt-payload-too-large");
        return;
      }
      if (packet.qos > 0 && !firstDelivery(broker.recent, packet.messageId, packet.dup, topic, payload))
        return;
      for (const [filter, listeners] of broker.filters) {
        if (!topicMatches(filter, topic)) continue;
        for (const listener of listeners) listener({ topic, payload });
      }
    });
    return broker;
  }
}

/**
 * False for a redelivery (DUP set) of a message already handled: QoS 1 means "at least once", and the broker
 * resends what it thinks was not acknowledged. Keyed by message id and content, remembered for the last 1,000.
 */
export function firstDelivery(
  recent: Set<string>,
  messageId: number | undefined,
  dup: boolean,
  topic: string,
  payload: Buffer,
): boolean {
  const key = `${messageId ?? ""}|${topic}|${createHash("sha256").update(payload).digest("base64")}`;
  if (dup && recent.has(key)) return false;
  recent.delete(key);
  recent.add(key);
  if (recent.size > RECENT_KEPT) recent.delete(recent.values().next().value as string);
  return true;
}

/** MQTT topic matching: `+` one level, `#` the rest (and the parent level itself). */
export function topicMatches(filter: string, topic: string): boolean {
  const filterLevels = filter.split("/");
  const topicLevels = topic.split("/");
  for (let index = 0; index < filterLevels.length; index++) {
    const level = filterLevels[index];
    if (level === "#") return index > 0 || !topic.startsWith("$");
    if (index >= topicLevels.length) return false;
    if (level === "+") {
      if (index === 0 && topic.startsWith("$")) return false;
      continue;
    }
    if (level !== topicLevels[index]) return false;
  }
  return filterLevels.length === topicLevels.length;
}

/** The broker URL without its password, for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(invalid url)";
  }
}

/** A random client id suffix for installs that have none yet. */
export function newClientIdPrefix(): string {
  return randomBytes(8).toString("hex");
}
