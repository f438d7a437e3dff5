import { html } from "hono/html";
import type { MemoryRecord } from "../../memory/types.js";
import type { PageBody } from "../layout.js";
import { type DashboardTimes, dashboardTimes } from "../time-format.js";
import { type PageRoutes, respond } from "./page-context.js";

const SHOWN = 100;

function memoryRow(record: MemoryRecord, times: DashboardTimes): PageBody {
  return html`<tr data-memory="${record.key}">
    <td data-label="Memory"><b>${record.key}</b><br /><small>${record.category} · ${times.at(record.updatedAt)}</small></td>
    <td data-label="Content">
      <form method="post" action="/ui/memory/save">
        <input type="hidden" name="agent" value="${record.agent}" />
        <input type="hidden" name="key" value="${record.key}" />
        <textarea name="content" rows="2" cols="60" aria-label="Content of ${record.key}">${record.content}</textarea>
        <button type="submit" aria-label="Save ${record.key}">Save</button>
      </form>
      <form method="post" action="/ui/memory/forget">
        <input type="hidden" name="agent" value="${record.agent}" />
        <input type="hidden" name="key" value="${record.key}" />
        <button type="submit" class="danger" aria-label="Forget ${record.key}">Forget</button>
      </form>
    </td>
  </tr>`;
}

/** `/ui/memory?agent=&q=`: search (as an owner's recall, not counted as an access), edit, add and forget. */
export const memoryRoutes: PageRoutes = (app, deps) => {
  const page = async (agent: string, query: string, notice?: string): Promise<PageBody> => {
    const memory = deps.memory();
    if (!memory) return html`<p>Memory is not enabled.</p>`;
    const records = query
      ? (await memory.recall({ agent, query, role: "owner", limit: SHOWN, touch: false })).hits.map(
          (hit) => hit.memory,
        )
      : memory.list(agent, { limit: SHOWN });
    const times = dashboardTimes(deps.timezone, () => deps.clock.now());
    return html`${notice ? html`<p role="status">${notice}</p>` : ""}
      <form method="get" action="/ui/memory" class="actions" role="search" aria-label="Search memories">
        <input name="agent" value="${agent}" size="10" aria-label="Agent" />
        <input name="q" value="${query}" placeholder="search memories" aria-label="Search memories" />
        <button type="submit">Search</button>
      </form>
      <table>${records.map((record) => memoryRow(record, times))}</table>
      ${records.length === 0 ? html`<p>No memories${query ? " match" : ""}.</p>` : ""}
      <h2>Add</h2>
      <form method="post" action="/ui/memory/save">
        <input type="hidden" name="agent" value="${agent}" />
        <input name="key" placeholder="key" aria-label="Key" required />
        <textarea name="content" rows="2" cols="60" placeholder="what to remember" aria-label="What to remember" required></textarea>
        <button type="submit">Save</button>
      </form>`;
  };
  const text = (value: unknown) => (typeof value === "string" ? value.trim() : "");

  app.get("/ui/memory", async (c) => {
    const agent = c.req.query("agent")?.trim() || deps.defaultAgent();
    return respond(c, "Memory", await page(agent, c.req.query("q")?.trim() ?? ""));
  });
  app.post("/ui/memory/:action{save|forget}", async (c) => {
    const memory = deps.memory();
    const form = await c.req.parseBody();
    const agent = text(form.agent) || deps.defaultAgent();
    const key = text(form.key);
    if (!memory || !key) return respond(c, "Memory", await page(agent, "", "A memory needs a key."), 409);
    if (c.req.param("action") === "forget") {
      const forgotten = memory.forget(agent, key, "owner");
      return respond(c, "Memory", await page(agent, "", forgotten ? `Forgot ${key}.` : `No memory ${key}.`));
    }
    const content = text(form.content);
    if (!content) return respond(c, "Memory", await page(agent, "", "A memory needs some text."), 409);
    const outcome = await memory.store({ agent, key, content, role: "owner" });
    return respond(c, "Memory", await page(agent, "", `${outcome.created ? "Added" : "Saved"} ${key}.`));
  });
};
