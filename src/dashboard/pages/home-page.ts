import type { Context } from "hono";
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { HttpApp } from "../../http/server.js";
import type { SandboxStatus } from "../../security/sandbox.js";
import type { PageBody } from "../layout.js";
import { type DashboardTimes, dashboardTimes, humanDuration } from "../time-format.js";
import {
  type BudgetLine,
  databaseBytes,
  type FailedMessage,
  failedMessages,
  humanBytes,
  type ProblemRun,
  problemRuns,
  type QueueDepth,
  queueDepth,
  type SpendToday,
  spendToday,
  type UndeliveredItem,
  undeliveredItems,
} from "./home-data.js";
import type { ModelChainState } from "./home-model.js";
import { pendingCard } from "./home-pending.js";
import { type DashboardDeps, respond } from "./page-context.js";
import { channelsCard } from "./status-page.js";

/** What only the home page needs besides the pages' deps. */
export interface HomeExtras {
  version: string;
  modelChain: () => ModelChainState;
}

const NEXT_RUNS_SHOWN = 5;

function modelLine(state: ModelChainState, times: DashboardTimes): PageBody {
  if (!state.chain) return html`<span class="warn">none configured (slash commands only)</span>`;
  const { primary, fallbacks } = state.chain;
  const chain = html`<b>${primary}</b>${fallbacks.map((model) => html` → ${model}`)}`;
  const last = state.last;
  if (!last) return html`${chain}<br /><small>no call yet</small>`;
  const verdict =
    last.result === "primary"
      ? html`<span class="ok">answering</span> (${last.model}, ${times.at(last.at)})`
      : last.result === "fallback"
        ? html`<span class="warn">on fallback ${last.model}</span> (${times.at(last.at)})`
        : html`<span class="bad">failing${last.errorCode ? ` (${last.errorCode})` : ""}</span> (${times.at(last.at)})`;
  return html`${chain}<br /><small data-model-state="${last.result}">${verdict}</small>`;
}

function sandboxLine(status: SandboxStatus): PageBody {
  if (status.active) return html`<span class="ok">on</span> <small>(bubblewrap)</small>`;
  return html`<span class="bad">OFF</span> <small>— shell and git run unsandboxed: ${status.reason}</small>`;
}

function factsCard(
  deps: DashboardDeps,
  extras: HomeExtras,
  sandbox: SandboxStatus,
  times: DashboardTimes,
): PageBody {
  const database = databaseBytes(deps.store.db);
  return html`<section class="card" aria-labelledby="home-magpie">
    <h2 id="home-magpie">Magpie</h2>
    <dl class="facts">
      <dt>Up</dt><dd data-fact="uptime">${humanDuration(deps.clock.now() - deps.startedAt)} <small>since ${times.at(deps.startedAt)}</small></dd>
      <dt>Version</dt><dd data-fact="version">${extras.version}</dd>
      <dt>Model</dt><dd data-fact="model">${modelLine(extras.modelChain(), times)}</dd>
      <dt>Sandbox</dt><dd data-fact="sandbox">${sandboxLine(sandbox)}</dd>
      <dt>Memory</dt><dd data-fact="rss">${humanBytes(process.memoryUsage.rss())} RSS</dd>
      <dt>Database</dt><dd data-fact="database">${database === null ? "in memory" : humanBytes(database)}</dd>
    </dl>
  </section>`;
}

function queueCard(queue: QueueDepth, times: DashboardTimes): PageBody {
  return html`<section class="card" aria-labelledby="home-queue">
    <h2 id="home-queue">Queue</h2>
    <dl class="facts">
      <dt>Messages waiting</dt><dd data-fact="inbox-waiting">${queue.waiting}</dd>
      <dt>Being answered</dt><dd data-fact="inbox-running">${queue.running}</dd>
      <dt>Outbox</dt><dd data-fact="outbox">${queue.outbox} to deliver${
        queue.outboxOldestAt !== null ? html` <small>(oldest ${times.at(queue.outboxOldestAt)})</small>` : ""
      }</dd>
    </dl>
  </section>`;
}

const CAP_LABELS: Record<BudgetLine["cap"], string> = {
  daily: "Daily",
  perChat: "Per chat",
  perJobRun: "Per job run",
  perTurn: "Per turn",
};

/** Dollars as spent by a small bot: cents and below matter ("$0.0042"); a trace amount is not shown as zero. */
const usd = (value: number) =>
  value > 0 && value < 0.0001 ? "< $0.0001" : `$${value < 1 ? value.toFixed(4) : value.toFixed(2)}`;

function budgetItem(line: BudgetLine): PageBody {
  const parts = [
    ...(line.limit.tokens !== undefined
      ? [`${line.spent.tokens.toLocaleString("en")} of ${line.limit.tokens.toLocaleString("en")} tokens`]
      : []),
    ...(line.limit.usd !== undefined ? [`${usd(line.spent.usd)} of ${usd(line.limit.usd)}`] : []),
  ].join(" · ");
  const label = `${CAP_LABELS[line.cap]} budget`;
  const percent = Math.round(line.fraction * 100);
  return html`<li data-budget="${line.cap}">
    <b>${label}</b> <span class="${percent >= 100 ? "bad" : percent >= 80 ? "warn" : ""}">${percent}%</span><br />
    <small>${parts}${line.scope ? ` — fullest: ${line.scope}` : ""}</small>
    <meter min="0" max="1" low="0.8" high="0.99" optimum="0" value="${Math.min(line.fraction, 1)}"
      aria-label="${label}: ${percent}% used"></meter>
  </li>`;
}

function spendCard(spend: SpendToday): PageBody {
  const total = spend.total;
  return html`<section class="card" aria-labelledby="home-spend">
    <h2 id="home-spend">Spend today <small>(${spend.date})</small></h2>
    <p data-fact="spend-total">${total.calls} LLM calls · ${total.tokens.toLocaleString("en")} tokens · ${usd(total.usd)}</p>
    ${
      spend.budgets.length > 0
        ? html`<ul class="list">${spend.budgets.map(budgetItem)}</ul>`
        : html`<p><small>No budgets are set (<code>budgets</code> in the config).</small></p>`
    }
  </section>`;
}

function cronCard(deps: DashboardDeps, problems: ProblemRun[], times: DashboardTimes): PageBody {
  const scheduler = deps.scheduler();
  if (!scheduler) {
    return html`<section class="card" aria-labelledby="home-cron">
      <h2 id="home-cron">Cron</h2><p>The scheduler is not running.</p>
    </section>`;
  }
  const next = scheduler
    .list()
    .flatMap((job) => (job.next_run ? [{ job, at: Date.parse(job.next_run) }] : []))
    .sort((a, b) => a.at - b.at)
    .slice(0, NEXT_RUNS_SHOWN);
  return html`<section class="card" aria-labelledby="home-cron">
    <h2 id="home-cron"><a href="/ui/cron">Cron</a></h2>
    <h3 class="muted">Next runs</h3>
    ${
      next.length === 0
        ? html`<p>No run is scheduled.</p>`
        : html`<ul class="list">${next.map(
            ({ job, at }) => html`<li data-next-run="${job.name}"><b>${job.name}</b> ${times.at(at)}</li>`,
          )}</ul>`
    }
    <h3 class="muted">Last failed or missed</h3>
    ${
      problems.length === 0
        ? html`<p>None.</p>`
        : html`<ul class="list">${problems.map(
            (run) => html`<li data-problem-run="${run.id}">
              <b>${run.jobName}</b> <span class="badge bad">${run.status === "missed" ? "missed" : `failed (${run.status})`}</span>
              ${times.at(run.status === "missed" ? (run.scheduledAt ?? run.startedAt) : run.startedAt)}
              ${run.durationMs !== null && run.status !== "missed" ? html`<small>after ${humanDuration(run.durationMs)}</small>` : ""}
              ${run.output ? html`<pre>${run.output.slice(0, 200)}</pre>` : ""}
            </li>`,
          )}</ul>`
    }
  </section>`;
}

/** Where delivery failover sent an item the platform refused (DESIGN.md → Delivery failover). */
function failoverBadge(path: string | null | undefined, already?: true): PageBody | string {
  if (path === undefined) return "";
  if (path && already)
    return html`<span class="badge" data-failover-path="${path}">already delivered via ${path} by its own delivery</span>`;
  return path
    ? html`<span class="badge" data-failover-path="${path}">delivered via ${path} (failover)</span>`
    : html`<span class="badge bad" data-failover-path="">failover found no path</span>`;
}

function failedCard(items: FailedMessage[], undelivered: UndeliveredItem[], times: DashboardTimes): PageBody {
  return html`<section class="card" aria-labelledby="home-failed">
    <h2 id="home-failed">Failed messages</h2>
    ${
      items.length === 0
        ? html`<p>No recent message failed or went undelivered.</p>`
        : html`<ul class="list">${items.map(
            (item) => html`<li data-failed-message="${item.id}">
              <span class="badge bad">${item.outcome}</span> ${failoverBadge(item.failedOver, item.failoverAlready)} ${times.at(item.at)}
              <a href="/ui/trace/${item.id}" aria-label="Trace of message ${item.id}">trace</a><br />
              <small>${item.sessionKey}${item.cause ? ` — ${item.cause}` : ""}</small>
              <pre>${item.preview}</pre>
            </li>`,
          )}</ul>`
    }
    ${
      undelivered.length === 0
        ? ""
        : html`<h3>Reports and alerts not delivered</h3>
          <ul class="list">${undelivered.map(
            (item) => html`<li data-undelivered-outbox="${item.outboxId}">
              <span class="badge bad">${item.origin}</span> ${failoverBadge(item.failover, item.failoverAlready)} ${times.at(item.at)}
              <a href="/ui/trace/outbox/${item.outboxId}" aria-label="Trace of outbox item ${item.outboxId}">trace</a><br />
              <small>to ${item.target}${item.error ? ` — ${item.error.slice(0, 200)}` : ""}</small>
              <pre>${item.preview}</pre>
            </li>`,
          )}</ul>`
    }
  </section>`;
}

/** The home page's live part: every card, refreshed by the change feed and every 30 s (times and uptime move). */
async function homePart(deps: DashboardDeps, extras: HomeExtras): Promise<HtmlEscapedString> {
  const now = deps.clock.now();
  const times = dashboardTimes(deps.timezone, () => now);
  const approvals = (deps.approvals()?.repository.recent(50) ?? []).filter(
    (record) => record.status === "pending",
  );
  const questions = (deps.questions()?.pending() ?? []).filter(
    ({ request }) => request.askedOf.role === "owner",
  );
  const sandbox = await deps.sandbox();
  return html`<div id="home" class="cards" hx-get="/ui/home" hx-trigger="magpie:changed from:body, every 30s" hx-swap="outerHTML">
    ${pendingCard(approvals, questions, { db: deps.store.db, timezone: deps.timezone, now })}
    ${factsCard(deps, extras, sandbox, times)}
    ${channelsCard(deps.channels(), times)}
    ${queueCard(queueDepth(deps.store.db), times)}
    ${spendCard(spendToday(deps.store.db, deps.budgets(), deps.timezone, now))}
    ${cronCard(deps, problemRuns(deps.store.db), times)}
    ${failedCard(failedMessages(deps.store.db), undeliveredItems(deps.store.db), times)}
  </div>`;
}

/** `GET /`: Magpie at a glance; `GET /ui/home`: its live part (htmx). */
export function homeRoutes(app: HttpApp, deps: DashboardDeps, extras: HomeExtras): void {
  const handler = (c: Context) =>
    respond(
      c,
      "Home",
      c.req.header("hx-request")
        ? homePart(deps, extras)
        : html`<div id="home-notice" aria-live="polite"></div>${homePart(deps, extras)}`,
    );
  app.get("/", handler);
  app.get("/ui/home", handler);
}
