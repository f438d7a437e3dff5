import type { MagpieFeature } from "./feature.js";

/**
 * The headless browser (`browser.enabled`): a service whose Chromium starts on the first `browser` call, a
 * session's page closed on `/reset`, everything closed on stop. Nothing is launched at start-up.
 */
export const browserFeature: MagpieFeature = {
  name: "browser",
  async setup(config, app) {
    if (!config.browser.enabled) return;
    const [{ BrowserService }, { SafeHttpClient }] = await Promise.all([
      import("../browser/browser-service.js"),
      import("../security/safe-http.js"),
    ]);
    const guard =
      app.services.safeHttp ?? new SafeHttpClient({ allowHosts: config.security.ssrf.allowHosts });
    const service = new BrowserService({ config: config.browser, guard });
    app.services.browser = service;
    return {
      stop: () => service.close(),
      onSessionReset: (sessionKey) => service.closeSession(sessionKey),
    };
  },
};
