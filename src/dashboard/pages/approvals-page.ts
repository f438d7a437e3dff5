import { html } from "hono/html";
import type { ApprovalRecord } from "../../security/approval-store.js";
import type { QuestionGate } from "../../security/question-gate.js";
import { approvalCard, askerOf, dashboardDecisionButtons, serveCountdownScript } from "../approval-card.js";
import type { PageBody } from "../layout.js";
import { type DashboardDeps, type PageRoutes, respond } from "./page-context.js";
import { questionsPart } from "./questions-part.js";

/** Pending approvals as cards with Approve / Deny, open questions, then the most recent decisions. */
function approvalsPart(
  deps: DashboardDeps,
  records: ApprovalRecord[],
  questions: QuestionGate | undefined,
  notice?: string,
): PageBody {
  const now = Date.now();
  const pending = records.filter((record) => record.status === "pending");
  const decided = records.filter((record) => record.status !== "pending");
  return html`<div id="approvals" hx-get="/ui/approvals" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    <h2>Pending</h2>
    ${
      pending.length === 0
        ? html`<p>Nothing waits for approval.</p>`
        : pending.map((record) =>
            approvalCard(
              { record, askedBy: askerOf(deps.store.db, record), timezone: deps.timezone, now },
              dashboardDecisionButtons(record.id),
            ),
          )
    }
    <h2>Questions</h2>
    ${questionsPart(questions)}
    <h2>Recent decisions</h2>
    <table>
      <tr><th>Id</th><th>Tool</th><th>Status</th><th>By</th></tr>
      ${decided.map(
        (record) => html`<tr>
          <td data-label="Id">${record.id}</td><td data-label="Tool">${record.tool}</td><td data-label="Status">${record.status}</td><td data-label="By">${record.decidedBy ?? ""}</td>
        </tr>`,
      )}
    </table>
  </div>`;
}

/** `/ui/approvals`: the dashboard user decides and answers as an owner, for any chat. */
export const approvalRoutes: PageRoutes = (app, deps) => {
  const part = (notice?: string) =>
    approvalsPart(deps, deps.approvals()?.repository.recent(50) ?? [], deps.questions(), notice);
  serveCountdownScript(app);
  app.get("/ui/approvals", (c) => respond(c, "Approvals", part()));
  app.post("/ui/approvals/:id/:decision{approve|deny}", (c) => {
    const gate = deps.approvals();
    const decision = c.req.param("decision") === "approve" ? "approved" : "denied";
    const result = gate
      ? gate.decideFromDashboard(c.req.param("id"), decision)
      : { ok: false as const, reason: "Approvals are not available." };
    const notice = result.ok
      ? `${result.decision === "approved" ? "Approved" : "Denied"}: ${result.tool} (${result.id}).`
      : result.reason;
    return respond(c, "Approvals", part(notice), result.ok ? 200 : 409);
  });
  app.post("/ui/questions/:id/answer", async (c) => {
    const form = await c.req.parseBody();
    const answer =
      typeof form.option === "string" && /^\d+$/.test(form.option)
        ? { optionIndex: Number(form.option) }
        : { text: typeof form.text === "string" ? form.text : "" };
    const answered = deps.questions()?.answerFromDashboard(c.req.param("id"), answer) ?? false;
    const notice = answered
      ? `Answered question ${c.req.param("id")}.`
      : "That question is closed or the answer isn't one of its options.";
    return respond(c, "Approvals", part(notice), answered ? 200 : 409);
  });
};
