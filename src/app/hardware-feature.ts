import type { HardwarePorts } from "../hardware/hardware-service.js";
import { ConfigError } from "../lib/errors.js";
import type { MagpieFeature } from "./feature.js";

/**
 * Boards, pins and watched edges (`hardware`): the hardware service for the tools, pin events into chats,
 * Pushover and agent turns, ports closed on stop. Without `hardware.boards` nothing is loaded.
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
      const { createActionRunner } = await import("../scheduler/action-runner.js");
      const service = new HardwareService(hardware, ports, () => new Date(app.clock.now()));
      const notifier = app.services.notifier;
      service.events = new WatchEvents({
        watches: hardware.watch,
        runner: createActionRunner({
          messenger: app.messenger,
          notifier,
          tools: app.tools,
          agent: app.agent,
          authority: () => app.ports.authority(),
          logger: app.logger.child({ module: "hardware" }),
          maxMessageLength: (channel) => app.channels.get(channel)?.capabilities.maxMessageLength ?? 4_000,
        }),
        pushoverConfigured: notifier.configured,
        notes: (note) => void app.messenger.note(note),
        kv: app.store.kv,
        logger: app.logger.child({ module: "hardware" }),
        now: () => new Date(app.clock.now()),
      });
      const events = service.events;
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
    async start(config, app) {
      const service = app.services.hardware;
      if (!service) return;
      for (const watch of config.hardware.watch) {
        const channel = watch.notify.channel;
        if (channel !== undefined && !app.channels.has(channel))
          app.logger.error({ pin: watch.pin, channel }, "hardware-watch-channel-not-connected");
        try {
          await service.gpio.watch(watch.pin);
        } catch (error) {
          // The box lacks the device or the permission: say so loudly (doctor names the fix); the app still runs.
          app.logger.error({ pin: watch.pin, err: error }, "hardware-watch-failed");
        }
      }
    },
  };
}

export const hardwareFeature = createHardwareFeature();
