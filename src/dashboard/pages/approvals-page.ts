import { html } from "hono/html";
import type { ApprovalRecord } from "../../security/approval-store.js";
import type { PageBody } from "../layout.js";
import { type PageRoutes, respond } from "./page-context.js";

/** Pending approvals with Approve / Deny, then the most recent decisions. */
function approvalsPart(records: ApprovalRecord[], notice?: string): PageBody {
  const pending = records.filter((record) => record.status === "pending");
  const decided = records.filter((record) => record.status !== "pending");
  return html`<div id="approvals" hx-get="/ui/approvals" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    <h2>Pending</h2>
    ${
      pending.length === 0
        ? html`<p>Nothing waits for approval.</p>`
        : html`<table>
          <tr><th>Id</th><th>Tool</th><th>Action</th><th>Reason</th><th>Chat</th><th></th></tr>
          ${pending.map(
            (record) => html`<tr data-approval="${record.id}">
              <td>${record.id}</td>
              <td>${record.tool}</td>
              <td><pre>${record.action}</pre></td>
              <td>${record.reason}</td>
              <td>${record.channel}:${record.chatId}</td>
              <td>
                <form method="post" action="/ui/approvals/${record.id}/approve" hx-post="/ui/approvals/${record.id}/approve" hx-target="#approvals" hx-swap="outerHTML">
                  <button type="submit">Approve</button>
                </form>
                <form method="post" action="/ui/approvals/${record.id}/deny" hx-post="/ui/approvals/${record.id}/deny" hx-target="#approvals" hx-swap="outerHTML">
                  <button type="submit">Deny</button>
                </form>
              </td>
            </tr>`,
          )}
        </table>`
    }
    <h2>Recent decisions</h2>
    <table>
      <tr><th>Id</th><th>Tool</th><th>Status</th><th>By</th></tr>
      ${decided.map(
        (record) => html`<tr>
          <td>${record.id}</td><td>${record.tool}</td><td>${record.status}</td><td>${record.decidedBy ?? ""}</td>
        </tr>`,
      )}
    </table>
  </div>`;
}

/** `/ui/approvals`: the dashboard user decides as an owner, for any chat. */
export const approvalRoutes: PageRoutes = (app, deps) => {
  const recent = () => deps.approvals()?.repository.recent(50) ?? [];
  app.get("/ui/approvals", (c) => respond(c, "Approvals", approvalsPart(recent())));
  app.post("/ui/approvals/:id/:decision{approve|deny}", (c) => {
    const gate = deps.approvals();
    const decision = c.req.param("decision") === "approve" ? "approved" : "denied";
    const result = gate
      ? gate.decideFromDashboard(c.req.param("id"), decision)
      : { ok: false as const, reason: "Approvals are not available." };
    const notice = result.ok
      ? `${result.decision === "approved" ? "Approved" : "Denied"}: ${result.tool} (${result.id}).`
      : result.reason;
    return respond(c, "Approvals", approvalsPart(recent(), notice), result.ok ? 200 : 409);
  });
};
