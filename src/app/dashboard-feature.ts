import { createPages } from "../http/server.js";
import type { MagpieFeature } from "./feature.js";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "::1", "localhost"]);

/**
 * The web dashboard (`http.dashboard.enabled`): loaded only when enabled, so a bot without it imports none of
 * its code. Bound to a non-loopback address it warns: the token and cookie travel in clear without TLS in front.
 */
export const dashboardFeature: MagpieFeature = {
  name: "dashboard",
  async setup(config, app) {
    const { http } = config;
    if (!http.dashboard.enabled || !http.dashboard.token) return;
    const [{ mountDashboard }, { WebChannel }] = await Promise.all([
      import("../dashboard/create-dashboard.js"),
      import("../../channels/web.js"),
    ]);
    const webChat = new WebChannel(app.store.kv, () => app.clock.now());
    const deps = {
      token: http.dashboard.token,
      store: app.store,
      timezone: config.timezone,
      channels: () => app.channels,
      approvals: () => app.services.approvals,
      questions: () => app.services.questions,
      scheduler: () => app.services.scheduler,
      memory: () => app.services.memory,
      // The app's directory: a reload that renames the agents moves the memory page with it.
      defaultAgent: () => app.agent.directory.defaultAgent,
      clock: app.clock,
      appId: app.events.app,
      startedAt: app.clock.now(),
      modelChain: () =>
        app.agent.model
          ? { primary: config.llm.model, fallbacks: config.llm.fallbacks.map((entry) => entry.model) }
          : null,
      // The probe the app ran at start-up (cached per process): the same answer /status gives.
      sandbox: async () => (await import("../security/sandbox.js")).sandboxStatus(config.tools.shell),
      budgets: () => config.budgets,
    };
    const pages = createPages();
    const dashboard = mountDashboard(pages, deps, webChat);
    if (!LOOPBACK_HOSTS.has(http.host)) {
      app.logger.warn(
        { host: http.host, port: http.port },
        "the dashboard listens on a non-loopback address: put a TLS reverse proxy in front (docs/dashboard.md)",
      );
    }
    app.logger.info("dashboard-enabled");
    return { pages, channels: [webChat], stop: () => dashboard.stop() };
  },
};
