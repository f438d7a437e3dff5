import { html } from "hono/html";
import { z } from "zod";
import { row } from "../../lib/row.js";
import type { Db } from "../../store/database.js";
import type { PageBody } from "../layout.js";
import { type DashboardTimes, dashboardTimes, humanDuration } from "../time-format.js";
import { type PageRoutes, respond } from "./page-context.js";

const auditRows = row(
  z.object({
    id: z.number(),
    at: z.number(),
    session_key: z.string().nullable(),
    sender: z.string().nullable(),
    tool: z.string(),
    arguments: z.string(),
    verdict: z.string(),
    outcome: z.string(),
    error_code: z.string().nullable(),
    duration_ms: z.number(),
  }),
  "audit",
);

const LIMIT = 100;
const VERDICTS = ["allow", "warn", "deny", "approved", "denied-by-user", "timeout"] as const;

interface AuditFilter {
  tool?: string;
  verdict?: string;
  session?: string;
}

interface AuditRow {
  id: number;
  at: number;
  session_key: string | null;
  sender: string | null;
  tool: string;
  arguments: string;
  verdict: string;
  outcome: string;
  error_code: string | null;
  duration_ms: number;
}

/** The newest audit rows matching every filter given (exact tool, verdict and session key). */
function queryAudit(db: Db, filter: AuditFilter): AuditRow[] {
  const conditions: Array<[string, string | undefined]> = [
    ["tool = ?", filter.tool],
    ["verdict = ?", filter.verdict],
    ["session_key = ?", filter.session],
  ];
  const given = conditions.filter((entry): entry is [string, string] => Boolean(entry[1]));
  const clauses = given.map(([clause]) => clause);
  const values = given.map(([, value]) => value);
  const where = clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "";
  return auditRows.all(
    db
      .prepare(
        `SELECT id, at, session_key, sender, tool, arguments, verdict, outcome, error_code, duration_ms
       FROM audit ${where} ORDER BY id DESC LIMIT ${LIMIT}`,
      )
      .all(...values),
  );
}

function auditPart(db: Db, filter: AuditFilter, times: DashboardTimes): PageBody {
  const query = new URLSearchParams(
    Object.entries(filter).filter((entry): entry is [string, string] => Boolean(entry[1])),
  ).toString();
  const rows = queryAudit(db, filter);
  return html`<div id="audit" hx-get="/ui/audit${query ? `?${query}` : ""}" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
    <form method="get" action="/ui/audit" class="actions" role="search" aria-label="Filter the audit log">
      <input name="tool" placeholder="tool" aria-label="Tool" value="${filter.tool ?? ""}" />
      <select name="verdict" aria-label="Verdict">
        <option value="">any verdict</option>
        ${VERDICTS.map((verdict) => html`<option ${verdict === filter.verdict ? "selected" : ""}>${verdict}</option>`)}
      </select>
      <input name="session" placeholder="session key" aria-label="Session key" value="${filter.session ?? ""}" />
      <button type="submit">Filter</button>
    </form>
    <table>
      <tr><th>When</th><th>Session</th><th>Sender</th><th>Tool</th><th>Arguments</th><th>Verdict</th><th>Outcome</th><th>Took</th></tr>
      ${rows.map(
        (row) => html`<tr data-audit="${row.id}">
          <td data-label="When">${times.at(row.at)}</td>
          <td data-label="Session">${
            row.session_key
              ? html`<a href="/ui/audit?session=${encodeURIComponent(row.session_key)}">${row.session_key}</a>`
              : ""
          }</td>
          <td data-label="Sender">${row.sender ?? ""}</td>
          <td data-label="Tool">${row.tool}</td>
          <td data-label="Arguments"><pre>${row.arguments.slice(0, 400)}</pre></td>
          <td data-label="Verdict">${row.verdict}</td>
          <td data-label="Outcome">${row.outcome}${row.error_code ? ` (${row.error_code})` : ""}</td>
          <td data-label="Took">${humanDuration(row.duration_ms)}</td>
        </tr>`,
      )}
    </table>
    ${rows.length === 0 ? html`<p>No audit rows match.</p>` : ""}
  </div>`;
}

/** `/ui/audit?tool=&verdict=&session=`: every tool call (redacted arguments, verdict, outcome). */
export const auditRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/audit", (c) => {
    const filter: AuditFilter = {
      tool: c.req.query("tool")?.trim() || undefined,
      verdict: c.req.query("verdict") || undefined,
      session: c.req.query("session")?.trim() || undefined,
    };
    const times = dashboardTimes(deps.timezone, () => deps.clock.now());
    return respond(c, "Audit log", auditPart(deps.store.db, filter, times));
  });
};
