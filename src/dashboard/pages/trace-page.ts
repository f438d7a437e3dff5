import { html } from "hono/html";
import { TraceRepository, traceOf } from "../../store/trace.js";
import { timeFormat, traceText } from "../../store/trace-text.js";
import { type PageRoutes, respond } from "./page-context.js";

/** `/ui/trace/<inbox id>`: a message's life, as `magpie trace` tells it (linked from its session's page). */
export const traceRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/trace/:id", (c) => {
    const id = Number(c.req.param("id"));
    const item = Number.isInteger(id) ? deps.store.inbox.get(id) : undefined;
    if (!item)
      return respond(
        c,
        "Trace",
        html`<p>No message ${c.req.param("id")} (pruned, or never received).</p>`,
        404,
      );
    const trace = traceOf(new TraceRepository(deps.store.db), item);
    const part = html`<div id="trace" hx-get="/ui/trace/${id}" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      <p>
        <a href="/ui/sessions/${encodeURIComponent(trace.sessionKey)}">${trace.sessionKey}</a> · outcome
        <b data-outcome="${trace.outcome ?? ""}">${trace.outcome ?? `none yet (${trace.status})`}</b>${trace.cause ? ` — ${trace.cause}` : ""}
      </p>
      <pre>${traceText(trace, timeFormat(deps.timezone))}</pre>
    </div>`;
    return respond(c, `Trace of message ${id}`, part);
  });
};
