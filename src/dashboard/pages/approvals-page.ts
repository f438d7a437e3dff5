import { html } from "hono/html";
import type { ApprovalRecord } from "../../security/approval-store.js";
import type { PageBody } from "../layout.js";

/** Pending approvals with Approve / Deny, then the most recent decisions. */
export function approvalsPage(records: ApprovalRecord[], notice?: string): PageBody {
  const pending = records.filter((record) => record.status === "pending");
  const decided = records.filter((record) => record.status !== "pending");
  return html`<div id="approvals">
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
