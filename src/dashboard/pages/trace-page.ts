import { html } from "hono/html";
import { TraceRepository, traceOf } from "../../store/trace.js";
import { deliveryLines, failoverText, timeFormat, traceText } from "../../store/trace-text.js";
import { type PageRoutes, respond } from "./page-context.js";

/** `/ui/trace/<inbox id>`: a message's life, as `magpie trace` tells it (linked from its session's page). */
export const traceRoutes: PageRoutes = (app, deps) => {
  // `/ui/trace/outbox/<id>`: one outbox item — a job report, trigger delivery or alert has no inbound message —
  // as `magpie trace outbox <id>` tells it, with the path that delivered it when the platform refused it (the id a
  // failover message names: "Trace: outbox <id>").
  app.get("/ui/trace/outbox/:id", (c) => {
    const id = Number(c.req.param("id"));
    const item = Number.isInteger(id) ? deps.store.outbox.get(id) : undefined;
    const delivery = item && new TraceRepository(deps.store.db).outboxItem(id);
    if (!item || !delivery)
      return respond(
        c,
        "Trace",
        html`<p>No outbox item ${c.req.param("id")} (pruned, or never queued).</p>`,
        404,
      );
    const failover = delivery.failover;
    const part = html`<div id="trace-outbox" hx-get="/ui/trace/outbox/${id}" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      <p>
        ${delivery.origin} to ${item.target.channel}:${item.target.chatId} · <b data-delivery-status="${delivery.status}">${delivery.status}</b>${
          failover
            ? html` · <b data-failover-path="${failover.path ?? ""}">${failoverText(failover)}</b>`
            : ""
        }${item.inboxId !== null ? html` · <a href="/ui/trace/${item.inboxId}">message ${item.inboxId}</a>` : ""}
      </p>
      <pre>${deliveryLines(delivery, timeFormat(deps.timezone)).join("\n")}</pre>
    </div>`;
    return respond(c, `Trace of outbox item ${id}`, part);
  });
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
