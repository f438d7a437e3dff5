import type { HardwarePorts } from "../hardware/hardware-service.js";
import { ConfigError } from "../lib/errors.js";
import type { MagpieFeature } from "./feature.js";

/**
 * Boards and pins (`hardware`): the hardware service for the tools, the pin event log and sessions' `gpio watch`,
 * ports closed on stop. `hardware.watch` entries become gpio triggers at load (the triggers feature runs them
 * through the one action runner). Without `hardware.boards` nothing is loaded.
 */
export function createHardwareFeature(ports: HardwarePorts = {}): MagpieFeature {
  return {
    name: "hardware",
    provides: ["hardware"],
    async setup(config, app) {
      const { hardware } = config;
      if (hardware.boards.length === 0) return;
      const { pushover } = config.notify;
      const needsPushover = hardware.watch.some((watch) => watch.notify.pushover);
      if (needsPushover && !(pushover.token && pushover.user))
        throw new ConfigError([
          "hardware.watch: notify.pushover is true but notify.pushover.token/user are not set (PUSHOVER_TOKEN, PUSHOVER_USER_KEY)",
        ]);
      // Loaded only when boards are configured: a box without hardware pays nothing at start-up.
      const { HardwareService } = await import("../hardware/hardware-service.js");
      const { WatchEvents } = await import("../hardware/watch-events.js");
      const service = new HardwareService(hardware, ports, () => new Date(app.clock.now()));
      // The pin event log and sessions' own `gpio watch`; `hardware.watch` runs as gpio triggers (triggers feature).
      const events = new WatchEvents({
        notes: (note) => void app.messenger.note(note),
        kv: app.store.kv,
        logger: app.logger.child({ module: "hardware" }),
      });
      service.events = events;
      service.gpio.onEdge((edge) => events.handle(edge));
      app.services.hardware = service;
      app.logger.info(
        {
          boards: hardware.boards.map((board) => `${board.name}:${board.type}`),
          pins: Object.keys(hardware.pins).length,
        },
        "hardware-configured",
      );
      return {
        stop: () => service.close(),
        // A session that ends gives up the serial ports it owned.
        onSessionReset: (sessionKey) => service.serial.closeOwnedBy(sessionKey),
      };
    },
    start(config, app) {
      if (!app.services.hardware) return;
      // The watched pins themselves are opened by their gpio triggers (src/triggers/watch-triggers.ts).
      for (const watch of config.hardware.watch) {
        const channel = watch.notify.channel;
        if (channel !== undefined && !app.channels.has(channel))
          app.logger.error({ pin: watch.pin, channel }, "hardware-watch-channel-not-connected");
      }
    },
  };
}

export const hardwareFeature = createHardwareFeature();
