import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { WebChannel } from "../../channels/web.js";
import type { HttpApp } from "../http/server.js";
import { dashboardAuth } from "./auth.js";
import { ChangeFeed, LIVE_SCRIPT } from "./change-feed.js";
import { approvalRoutes } from "./pages/approvals-page.js";
import { auditRoutes } from "./pages/audit-page.js";
import { chatRoutes } from "./pages/chat-page.js";
import { cronRoutes } from "./pages/cron-page.js";
import { ModelChainWatch } from "./pages/home-model.js";
import { homeRoutes } from "./pages/home-page.js";
import { memoryRoutes } from "./pages/memory-page.js";
import type { DashboardDeps } from "./pages/page-context.js";
import { sessionRoutes } from "./pages/sessions-page.js";
import { traceRoutes } from "./pages/trace-page.js";
import { usageRoutes } from "./pages/usage-page.js";
import { magpieVersion } from "./version.js";

export type { DashboardDeps };

/**
 * Mounts the dashboard on the HTTP app: `GET /` and everything under `/ui/` (the web chat included), all behind
 * the token. Returns what must end when the app stops: the change feed's open event streams, the model watch.
 */
export function mountDashboard(app: HttpApp, deps: DashboardDeps, webChat: WebChannel): { stop(): void } {
  const auth = dashboardAuth(deps.token);
  // Only the dashboard's own paths: health checks and webhooks stay open to their callers.
  app.use("/", auth);
  app.use("/ui/*", auth);

  const htmx = readFileSync(createRequire(import.meta.url).resolve("htmx.org/dist/htmx.min.js"));
  const scriptHeaders = {
    "content-type": "text/javascript; charset=utf-8",
    "cache-control": "private, max-age=86400",
  };
  app.get("/ui/assets/htmx.min.js", (c) => c.body(htmx, 200, scriptHeaders));
  app.get("/ui/assets/live.js", (c) => c.body(LIVE_SCRIPT, 200, scriptHeaders));
  const feed = new ChangeFeed(deps.store.db);
  app.get("/ui/events", (c) => feed.stream(c));

  const models = new ModelChainWatch(deps.modelChain, deps.store.db, deps.appId);
  homeRoutes(app, deps, { version: magpieVersion(), modelChain: () => models.state() });
  for (const routes of [
    approvalRoutes,
    sessionRoutes,
    traceRoutes,
    cronRoutes,
    memoryRoutes,
    auditRoutes,
    usageRoutes,
  ]) {
    routes(app, deps);
  }
  chatRoutes(app, webChat, deps);
  return {
    stop() {
      feed.stop();
      models.stop();
    },
  };
}
