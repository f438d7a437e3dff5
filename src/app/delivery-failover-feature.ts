import { magpieEvents } from "../core/events.js";
import { DeliveryFailover } from "../notify/delivery-failover.js";
import { defineFeature, type MagpieFeature } from "./feature.js";

/** Wires DeliveryFailover to the app's delivery events (one line in app/features.ts). */
export const deliveryFailoverFeature: MagpieFeature = defineFeature({
  name: "delivery-failover",
  uses: ["authority"],
  setup(config, app) {
    const logger = app.logger.child({ component: "delivery-failover" });
    const failover = new DeliveryFailover({
      store: app.store,
      logger,
      clock: app.clock,
      events: app.events,
      settings: () => config.delivery,
      notifier: () => app.services.notifier,
      adapters: () => app.channels,
      authority: () => app.ports.authority(),
    });
    // The scheduler asks it before alerting about a failed report (one message to the owner, not two).
    app.services.deliveryFailover = (outboxId) => failover.deliveredVia(outboxId);
    const onError = (error: unknown) => logger.error({ err: error }, "delivery-failover-failed");
    const unsubscribe = magpieEvents.delivery.subscribe(
      app.events.app,
      (event) => void failover.onDelivery(event)?.catch(onError),
      onError,
    );
    return { stop: unsubscribe };
  },
});
