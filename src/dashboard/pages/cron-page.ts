import { html } from "hono/html";
import { cronOutcomeOf, type JobRun } from "../../scheduler/job.js";
import type { JobView } from "../../scheduler/job-view.js";
import { SchedulerError } from "../../scheduler/scheduler-error.js";
import { CHART_STYLE } from "../charts/chart-style.js";
import { cronRunsByDay, type DayOutcomes, dayStateOf } from "../charts/cron-days.js";
import { cronStrip, cronStripLegend, DAY_STATES, describeDay } from "../charts/cron-strip.js";
import { type ChartDay, lastDays } from "../charts/days.js";
import type { PageBody } from "../layout.js";
import { type DashboardTimes, dashboardTimes, humanDuration } from "../time-format.js";
import { type DashboardDeps, type PageRoutes, respond } from "./page-context.js";

const RUNS_SHOWN = 5;

function actionButton(job: JobView, action: string, label: string): PageBody {
  const url = `/ui/cron/${job.id}/${action}`;
  return html`<form method="post" action="${url}" hx-post="${url}" hx-target="#cron" hx-swap="outerHTML"${
    action === "remove" ? html` hx-confirm="Remove job ${job.name}?"` : ""
  }><button type="submit">${label}</button></form>`;
}

function runsList(runs: JobRun[], times: DashboardTimes): PageBody {
  if (runs.length === 0) return html`<span>never ran</span>`;
  return html`<ul>
    ${runs.map(
      (run) => html`<li data-run="${run.id}" class="${run.status}">
        ${times.at(run.startedAt)} ${run.trigger} — <b>${run.status === "running" ? "running" : cronOutcomeOf(run.status)}</b>${
          run.status === "timeout" ? " (timeout)" : ""
        }${
          run.durationMs !== null ? html` (${humanDuration(run.durationMs)})` : ""
        }${run.output ? html`<pre>${run.output.slice(0, 500)}</pre>` : ""}
      </li>`,
    )}
  </ul>`;
}

const STRIP_DAYS = 14;

/** Each job's last 14 days as a strip of ok / failed / missed / skipped squares, and the same as a table. */
function cronStrips(jobs: JobView[], days: readonly ChartDay[], runs: Map<number, DayOutcomes[]>): PageBody {
  const empty = days.map(() => ({ ran: 0, failed: 0, missed: 0, skipped: 0 }));
  const rows = jobs.map((job) => ({ job, outcomes: runs.get(job.id) ?? empty }));
  return html`${CHART_STYLE}<section aria-labelledby="cron-strips-title">
    <h2 id="cron-strips-title">Last ${days.length} days</h2>
    <div class="cron-strips">
      ${rows.map(
        ({ job, outcomes }) => html`<div class="cron-strip-name">${job.name}</div>
          <div data-strip="${job.name}">${cronStrip(job.name, days, outcomes)}</div>`,
      )}
    </div>
    ${cronStripLegend()}
    <details>
      <summary>Last ${days.length} days as a table</summary>
      <div class="chart-table">
        <table>
          <tr><th>Job</th>${days.map((day) => html`<th>${day.label}</th>`)}</tr>
          ${rows.map(
            ({ job, outcomes }) =>
              html`<tr><td data-label="Job"><b>${job.name}</b></td>${outcomes.map((day, index) => {
                const state = dayStateOf(day);
                return html`<td data-label="${days[index]!.label}" title="${describeDay(day)}">${DAY_STATES[state].glyph} ${state === "none" ? "—" : describeDay(day)}</td>`;
              })}</tr>`,
          )}
        </table>
      </div>
    </details>
  </section>`;
}

/** Every job with its schedule, next run, its last runs and the run now / pause / resume / remove actions. */
function cronPart(deps: DashboardDeps, notice?: string): PageBody {
  const scheduler = deps.scheduler();
  const jobs = scheduler?.list() ?? [];
  const days = lastDays(Date.now(), deps.timezone, STRIP_DAYS);
  const times = dashboardTimes(deps.timezone);
  return html`<div id="cron" hx-get="/ui/cron" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    ${
      !scheduler
        ? html`<p>The scheduler is not running.</p>`
        : jobs.length === 0
          ? html`<p>No cron jobs. Ask in chat ("every morning at 8 …") or add them under <code>cron.jobs</code>.</p>`
          : html`${cronStrips(jobs, days, cronRunsByDay(deps.store.db, days))}
          <h2>Jobs</h2>
          <table>
          <tr><th>Job</th><th>Schedule</th><th>Status</th><th>Next run</th><th>Runs</th><th></th></tr>
          ${jobs.map(
            (job) => html`<tr data-job="${job.name}">
              <td data-label="Job"><b>${job.name}</b> (${job.id})<br /><small>${job.kind}: ${job.command ?? job.prompt ?? job.message ?? ""}</small></td>
              <td data-label="Schedule">${job.schedule}<br /><small>${job.timezone}</small></td>
              <td data-label="Status">${job.status}</td>
              <td data-label="Next run">${job.next_run ? times.at(Date.parse(job.next_run)) : ""}</td>
              <td data-label="Last runs">${runsList(scheduler.runs(job.id, RUNS_SHOWN), times)}</td>
              <td>
                ${actionButton(job, "run", "Run now")}
                ${job.status === "active" ? actionButton(job, "pause", "Pause") : ""}
                ${job.status === "paused" ? actionButton(job, "resume", "Resume") : ""}
                ${actionButton(job, "remove", "Remove")}
              </td>
            </tr>`,
          )}
        </table>`
    }
  </div>`;
}

/** `/ui/cron`: the dashboard user acts as an owner, like /cron in a DM. */
export const cronRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/cron", (c) => respond(c, "Cron jobs", cronPart(deps)));
  app.post("/ui/cron/:id{[0-9]+}/:action{run|pause|resume|remove}", (c) => {
    const scheduler = deps.scheduler();
    if (!scheduler) return respond(c, "Cron jobs", cronPart(deps), 409);
    const id = Number(c.req.param("id"));
    let notice: string;
    try {
      switch (c.req.param("action")) {
        case "run":
          // The run shows up by itself (live updates); its failure is recorded in its run row.
          scheduler.runNow(id).catch(() => {});
          notice = `Started ${scheduler.get(id).name}.`;
          break;
        case "pause":
          notice = `Paused ${scheduler.setEnabled(id, false).name}.`;
          break;
        case "resume":
          notice = `Resumed ${scheduler.setEnabled(id, true).name}.`;
          break;
        default:
          notice = `Removed ${scheduler.remove(id).name}.`;
      }
    } catch (error) {
      if (!(error instanceof SchedulerError)) throw error;
      return respond(c, "Cron jobs", cronPart(deps, error.message), 409);
    }
    return respond(c, "Cron jobs", cronPart(deps, notice));
  });
};
