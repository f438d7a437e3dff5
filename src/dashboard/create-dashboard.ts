import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ChannelAdapter } from "../core/types.js";
import type { HttpApp } from "../http/server.js";
import type { ChatApprovalGate } from "../security/approval-gate.js";
import { dashboardAuth } from "./auth.js";
import { layout } from "./layout.js";
import { approvalsPage } from "./pages/approvals-page.js";
import { statusPage } from "./pages/status-page.js";

/** What the dashboard reads and steers. */
export interface DashboardDeps {
  token: string;
  channels: () => ReadonlyMap<string, ChannelAdapter>;
  approvals: () => ChatApprovalGate | undefined;
}

/** Mounts the dashboard on the HTTP app: `GET /` and everything under `/ui/`, all behind the token. */
export function mountDashboard(app: HttpApp, deps: DashboardDeps): void {
  const auth = dashboardAuth(deps.token);
  // Only the dashboard's own paths: health checks and webhooks stay open to their callers.
  app.use("/", auth);
  app.use("/ui/*", auth);

  const htmx = readFileSync(createRequire(import.meta.url).resolve("htmx.org/dist/htmx.min.js"));
  app.get("/ui/assets/htmx.min.js", (c) => {
    c.header("content-type", "text/javascript; charset=utf-8");
    c.header("cache-control", "private, max-age=86400");
    return c.body(htmx);
  });

  app.get("/", (c) => c.html(layout("Status", statusPage(deps.channels()))));

  const recentApprovals = () => deps.approvals()?.repository.recent(50) ?? [];
  app.get("/ui/approvals", (c) => c.html(layout("Approvals", approvalsPage(recentApprovals()))));
  app.post("/ui/approvals/:id/:decision{approve|deny}", (c) => {
    const gate = deps.approvals();
    const decision = c.req.param("decision") === "approve" ? "approved" : "denied";
    const result = gate
      ? gate.decideFromDashboard(c.req.param("id"), decision)
      : { ok: false as const, reason: "Approvals are not available." };
    const notice = result.ok
      ? `${result.decision === "approved" ? "Approved" : "Denied"}: ${result.tool} (${result.id}).`
      : result.reason;
    // htmx swaps the fragment in; a plain form post (no JavaScript) gets the whole page.
    if (c.req.header("hx-request")) return c.html(approvalsPage(recentApprovals(), notice));
    return c.html(layout("Approvals", approvalsPage(recentApprovals(), notice)), result.ok ? 200 : 409);
  });
}
