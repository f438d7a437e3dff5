import { createHash, randomBytes } from "node:crypto";
import mqtt, { type MqttClient } from "mqtt";
import type { Logger } from "pino";
import type { MqttConfig } from "../config/sections/triggers.js";
import { redactUrl, sameBroker } from "./mqtt-broker.js";
import { topicMatches } from "./mqtt-topic.js";
import type { RetainedLedger } from "./retained-ledger.js";
import { TriggerError } from "./trigger-error.js";

export { redactUrl } from "./mqtt-broker.js";
export { topicMatches } from "./mqtt-topic.js";

/** Where a connection goes and what it logs in with. */
interface BrokerSettings {
  url: string;
  username?: string;
  password?: string;
}

/** One message as MQTT triggers see it. */
export interface MqttMessage {
  topic: string;
  payload: Buffer;
}

/** What a trigger asks the hub for. */
export interface MqttSubscription {
  /** The broker: omitted for the configured one (`mqtt.url`). */
  url?: string;
  /**
   * True for a trigger from the config file, whose owner may name another broker (reached without the configured
   * credentials); a trigger made in chat gets the configured broker only.
   */
  ownerNamed: boolean;
  filter: string;
  /** Who receives (the trigger's name): each message reaches it once, a retained one once per change. */
  key: string;
}

interface Listener {
  key: string;
  deliver: (message: MqttMessage) => void;
}

interface Subscription {
  /** MQTT 5 subscription identifier: the broker names it in each message this subscription brought. */
  id: number;
  listeners: Set<Listener>;
}

interface Broker {
  url: string;
  client: MqttClient;
  /** Topic filter → its subscription. */
  filters: Map<string, Subscription>;
  /** Subscription identifier → topic filter. */
  ids: Map<number, string>;
  /** Recent QoS 1 deliveries (message id + content): a redelivered one (DUP) is not run twice. */
  recent: Set<string>;
  connected: Promise<void>;
}

export interface MqttHubDeps {
  logger: Logger;
  /** Stable per install: the broker keeps the session (and what arrived meanwhile) under this id. */
  clientIdPrefix: string;
  /** `mqtt` from the config, read at each connect (a reload replaces it): the one broker that gets credentials. */
  settings: () => Pick<MqttConfig, "url" | "username" | "password">;
  /** Brokers the owner named in the config file (`triggers.<name>.on.mqtt.url`), read at each connect. */
  ownerNamed: () => string[];
  retained: RetainedLedger;
}

const FIRST_RETRY_MS = 1_000;
/** How long `mqtt_publish` waits for the broker. */
const PUBLISH_TIMEOUT_MS = 10_000;
const LONGEST_RETRY_MS = 60_000;
/** QoS 1 deliveries remembered for redelivery checks. */
const RECENT_KEPT = 1_000;
/** The largest MQTT payload a trigger reads (a sensor reading, not a file). */
export const MAX_MQTT_PAYLOAD = 256 * 1024;
/** How long the broker keeps Magpie's session (subscriptions, messages meanwhile) while it is away. */
const SESSION_EXPIRY_SECS = 7 * 24 * 3600;
/** MQTT 5's largest subscription identifier. */
const MAX_SUBSCRIPTION_ID = 268_435_455;

/**
 * One MQTT 5 connection per broker, shared by every trigger on it and by `mqtt_publish` (the `mqtt` package; this
 * module is loaded only with the trigger runtime). It is the one place a broker is reached (DESIGN.md → Security →
 * "One guard per resource"): the configured `mqtt.url` with its credentials, a broker the owner named in the
 * config file without them, nothing else — whoever asks.
 *
 * Subscriptions are QoS 1 in a persistent session, so messages published while Magpie was away arrive when it
 * reconnects; reconnects back off from 1 s to 60 s. Each subscription carries an identifier, so a message that
 * matches two overlapping filters (`a/#`, `a/+`) reaches each trigger once; retained messages keep their flag
 * (retain-as-published), and one a trigger already handled is not handled again after a resubscribe or restart.
 */
export class MqttHub {
  private readonly brokers = new Map<string, Broker>();
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly deps: MqttHubDeps) {}

  /**
   * Subscribes `deliver` to a filter (connecting on first use, in the background: a broker that is down never
   * holds up start-up). A broker it may not reach is refused here and logged. Returns the unsubscribe;
   * `settled()` waits for the broker's answer.
   */
  subscribe(request: MqttSubscription, deliver: (message: MqttMessage) => void): () => void {
    let stopped = false;
    let stop = () => {};
    const { filter } = request;
    const listener: Listener = { key: request.key, deliver };
    const subscribing = (async () => {
      const broker = this.broker(this.settingsFor(request.url, request.ownerNamed));
      if (stopped) return;
      let subscription = broker.filters.get(filter);
      const first = !subscription;
      if (!subscription) {
        subscription = { id: subscriptionId(broker, filter), listeners: new Set() };
        broker.filters.set(filter, subscription);
        broker.ids.set(subscription.id, filter);
      }
      subscription.listeners.add(listener);
      const current = subscription;
      stop = () => {
        current.listeners.delete(listener);
        if (current.listeners.size > 0 || broker.filters.get(filter) !== current) return;
        broker.filters.delete(filter);
        broker.ids.delete(current.id);
        if (broker.client.connected) broker.client.unsubscribe(filter);
      };
      // Sent now or, while the broker is away, on connecting (mqtt.js queues it).
      if (!first) return;
      await broker.client.subscribeAsync(filter, {
        qos: 1,
        rap: true,
        properties: { subscriptionIdentifier: current.id },
      });
      this.deps.logger.info({ broker: redactUrl(broker.url), filter }, "mqtt-subscribed");
    })();
    const tracked = subscribing
      .catch((error: unknown) =>
        this.deps.logger.error(
          { filter, error: error instanceof Error ? error.message : String(error) },
          "mqtt-subscribe-failed",
        ),
      )
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

  /** Publishes one message to the configured broker; resolves when it took it (QoS 1/2) or it was written (QoS 0). */
  async publish(topic: string, payload: string, options: { qos: 0 | 1 | 2; retain: boolean }): Promise<void> {
    const settings = this.settingsFor(undefined, false);
    const broker = this.broker(settings);
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

  /**
   * The guard: the configured broker (with `mqtt.username`/`mqtt.password`), or — for the owner's config file
   * only — a broker named there, without those credentials. Anything else throws `mqtt.broker_not_allowed`.
   */
  private settingsFor(url: string | undefined, ownerNamed: boolean): BrokerSettings {
    const configured = this.deps.settings();
    if (url === undefined || (configured.url !== undefined && sameBroker(url, configured.url))) {
      if (!configured.url)
        throw new TriggerError("mqtt.not_configured", "No MQTT broker is configured: set mqtt.url.");
      return {
        url: configured.url,
        ...(configured.username ? { username: configured.username } : {}),
        ...(configured.password ? { password: configured.password } : {}),
      };
    }
    if (ownerNamed && this.deps.ownerNamed().some((named) => sameBroker(named, url))) return { url };
    throw new TriggerError(
      "mqtt.broker_not_allowed",
      `${redactUrl(url)} is not the configured MQTT broker (mqtt.url); Magpie connects to no other broker${ownerNamed ? " than those the config file names" : ""}.`,
    );
  }

  private broker(settings: BrokerSettings): Broker {
    const existing = this.brokers.get(settings.url);
    if (existing) return existing;
    const id = createHash("sha256")
      .update(`${this.deps.clientIdPrefix}|${settings.url}`)
      .digest("hex")
      .slice(0, 12);
    const client = mqtt.connect(settings.url, {
      clientId: `magpie-${id}`,
      protocolVersion: 5,
      clean: false,
      properties: { sessionExpiryInterval: SESSION_EXPIRY_SECS },
      reconnectPeriod: FIRST_RETRY_MS,
      connectTimeout: 10_000,
      resubscribe: true,
      ...(settings.username ? { username: settings.username } : {}),
      ...(settings.password ? { password: settings.password } : {}),
    });
    const connected = new Promise<void>((resolve) => client.once("connect", () => resolve()));
    const broker: Broker = {
      url: settings.url,
      client,
      filters: new Map(),
      ids: new Map(),
      recent: new Set(),
      connected,
    };
    this.brokers.set(settings.url, broker);
    const logger = this.deps.logger;
    client.on("connect", () => {
      client.options.reconnectPeriod = FIRST_RETRY_MS;
      logger.info({ broker: redactUrl(settings.url) }, "mqtt-connected");
    });
    client.on("offline", () => {
      // Back off: each failed reconnect waits twice as long, up to a minute.
      const period = client.options.reconnectPeriod ?? FIRST_RETRY_MS;
      client.options.reconnectPeriod = Math.min(period * 2, LONGEST_RETRY_MS);
      logger.warn({ broker: redactUrl(settings.url), retryMs: period }, "mqtt-offline");
    });
    client.on("error", (error) => logger.warn({ broker: redactUrl(settings.url), err: error }, "mqtt-error"));
    client.on("message", (topic, payload, packet) => {
      if (payload.length > MAX_MQTT_PAYLOAD) {
        logger.warn({ topic, bytes: payload.length }, "mqtt-payload-too-large");
        return;
      }
      if (packet.qos > 0 && !firstDelivery(broker.recent, packet.messageId, packet.dup, topic, payload))
        return;
      for (const subscription of subscriptionsOf(broker, topic, packet.properties?.subscriptionIdentifier)) {
        for (const listener of subscription.listeners) {
          if (packet.retain && !this.deps.retained.take(listener.key, topic, payload)) {
            logger.debug({ trigger: listener.key, topic }, "mqtt-retained-already-handled");
            continue;
          }
          listener.deliver({ topic, payload });
        }
      }
    });
    return broker;
  }
}

/**
 * The subscriptions a message came through: those whose identifiers it carries (one message per matching
 * subscription, or one naming them all — either way each filter once), each re-checked against the topic. A
 * message without identifiers (a broker that sends none) goes to every matching filter.
 */
function subscriptionsOf(broker: Broker, topic: string, ids: number | number[] | undefined): Subscription[] {
  const filters =
    ids === undefined
      ? [...broker.filters.keys()]
      : (Array.isArray(ids) ? ids : [ids]).flatMap((id) => broker.ids.get(id) ?? []);
  return [...new Set(filters)].flatMap((filter) => {
    const subscription = broker.filters.get(filter);
    return subscription && topicMatches(filter, topic) ? [subscription] : [];
  });
}

/**
 * A filter's subscription identifier: derived from the filter, so after a restart the messages the broker kept
 * for the session (tagged with the identifiers of the previous run) still find their filter.
 */
function subscriptionId(broker: Broker, filter: string): number {
  let id = 1 + (createHash("sha256").update(filter).digest().readUInt32BE(0) % MAX_SUBSCRIPTION_ID);
  while (broker.ids.has(id) && broker.ids.get(id) !== filter) id = (id % MAX_SUBSCRIPTION_ID) + 1;
  return id;
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
  if (recent.size > RECENT_KEPT) {
    // A Set iterates in insertion order: the first key is the oldest.
    for (const oldest of recent) {
      recent.delete(oldest);
      break;
    }
  }
  return true;
}

/** A random client id suffix for installs that have none yet. */
export function newClientIdPrefix(): string {
  return randomBytes(8).toString("hex");
}
