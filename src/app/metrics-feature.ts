import type { MagpieFeature } from "./feature.js";

/**
 * `GET /metrics` (`http.metrics.enabled`): Prometheus text from subscribers to the core's event stream. Off by
 * default, and then nothing of it (prom-client included) is loaded.
 */
export const metricsFeature: MagpieFeature = {
  name: "metrics",
  async setup(app) {
    const settings = app.config.http.metrics;
    if (!settings.enabled) return;
    const { createMetrics, registerMetricsRoute } = await import("../http/metrics.js");
    const logger = app.logger.child({ component: "metrics" });
    const metrics = createMetrics({
      app: app.events.app,
      db: app.store.db,
      channels: () => app.channels,
      now: () => app.clock.now(),
      onError: (error) => logger.error({ err: error }, "metrics-subscriber-failed"),
    });
    registerMetricsRoute(app.httpApp, metrics, {
      ...(settings.token ? { token: settings.token } : {}),
      logger,
    });
    app.onStop(() => metrics.close());
  },
};
