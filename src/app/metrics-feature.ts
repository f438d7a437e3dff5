import { isChatChannel } from "../../channels/catalog.js";
import type { MagpieConfig } from "../config/schema.js";
import type { RegisteredNames } from "../http/metrics-labels.js";
import { createPages } from "../http/server.js";
import type { AppContext, MagpieFeature } from "./feature.js";

/**
 * `GET /metrics` (`http.metrics.enabled`): Prometheus text from subscribers to the core's event stream. Off by
 * default, and then nothing of it (prom-client included) is loaded.
 */
export const metricsFeature: MagpieFeature = {
  name: "metrics",
  async setup(config, app) {
    const settings = config.http.metrics;
    if (!settings.enabled) return;
    const { createMetrics, registerMetricsRoute } = await import("../http/metrics.js");
    const logger = app.logger.child({ component: "metrics" });
    const metrics = createMetrics({
      app: app.events.app,
      db: app.store.db,
      channels: () => app.channels,
      names: registeredNames(config, app),
      now: () => app.clock.now(),
      onError: (error) => logger.error({ err: error }, "metrics-subscriber-failed"),
    });
    const pages = createPages();
    registerMetricsRoute(pages, metrics, {
      ...(settings.token ? { token: settings.token } : {}),
      logger,
    });
    return { pages, stop: () => metrics.close() };
  },
};

/** What the app registered, read when an event comes (the registry and the config change at run time). */
function registeredNames(config: MagpieConfig, app: AppContext): RegisteredNames {
  return {
    tool: (name) => app.tools.get(name) !== undefined,
    channel: (name) => isChatChannel(name) || app.channels.has(name),
    model: (name) => configuredModels(config, app).has(name),
    trigger: (name) => Object.hasOwn(config.triggers, name),
  };
}

/** Every model name the config gives, as LLM calls report them (src/voice, src/media: their defaults). */
function configuredModels(config: MagpieConfig, app: AppContext): Set<string> {
  const agents = app.agent.directory;
  const { llm } = config;
  return new Set<string>([
    llm.model,
    ...llm.fallbacks.map((fallback) => fallback.model),
    ...agents.names().flatMap((agent) => agents.get(agent)?.model ?? []),
    ...(llm.embeddingModel ? [llm.embeddingModel] : []),
    llm.transcriptionModel ?? "transcription",
    config.voice.speechModel ?? "tts-1",
    ...Object.keys(llm.prices),
  ]);
}
