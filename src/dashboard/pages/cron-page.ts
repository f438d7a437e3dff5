import { html } from "hono/html";
import { cronOutcomeOf, type JobRun } from "../../scheduler/job.js";
import type { JobView } from "../../scheduler/job-view.js";
import type { Scheduler } from "../../scheduler/scheduler.js";
import { SchedulerError } from "../../scheduler/scheduler-error.js";
import type { PageBody } from "../layout.js";
import { type PageRoutes, respond } from "./page-context.js";

const RUNS_SHOWN = 5;
const time = (at: number | null) => (at === null ? "" : new Date(at).toISOString().replace(".000Z", "Z"));

function actionButton(job: JobView, action: string, label: string): PageBody {
  const url = `/ui/cron/${job.id}/${action}`;
  return html`<form method="post" action="${url}" hx-post="${url}" hx-target="#cron" hx-swap="outerHTML"${
    action === "remove" ? html` hx-confirm="Remove job ${job.name}?"` : ""
  }><button type="submit">${label}</button></form>`;
}

function runsList(runs: JobRun[]): PageBody {
  if (runs.length === 0) return html`<span>never ran</span>`;
  return html`<ul>
    ${runs.map(
      (run) => html`<li data-run="${run.id}" class="${run.status}">
        ${time(run.startedAt)} ${run.trigger} — <b>${run.status === "running" ? "running" : cronOutcomeOf(run.status)}</b>${
          run.status === "timeout" ? " (timeout)" : ""
        }${
          run.durationMs !== null ? html` (${run.durationMs} ms)` : ""
        }${run.output ? html`<pre>${run.output.slice(0, 500)}</pre>` : ""}
      </li>`,
    )}
  </ul>`;
}

/** Every job with its schedule, next run, its last runs and the run now / pause / resume / remove actions. */
function cronPart(scheduler: Scheduler | undefined, notice?: string): PageBody {
  const jobs = scheduler?.list() ?? [];
  return html`<div id="cron" hx-get="/ui/cron" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    ${
      !scheduler
        ? html`<p>The scheduler is not running.</p>`
        : jobs.length === 0
          ? html`<p>No cron jobs. Ask in chat ("every morning at 8 …") or add them under <code>cron.jobs</code>.</p>`
          : html`<table>
          <tr><th>Job</th><th>Schedule</th><th>Status</th><th>Next run</th><th>Runs</th><th></th></tr>
          ${jobs.map(
            (job) => html`<tr data-job="${job.name}">
              <td><b>${job.name}</b> (${job.id})<br /><small>${job.kind}: ${job.command ?? job.prompt ?? job.message ?? ""}</small></td>
              <td>${job.schedule}<br /><small>${job.timezone}</small></td>
              <td>${job.status}</td>
              <td>${job.next_run ?? ""}</td>
              <td>${runsList(scheduler.runs(job.id, RUNS_SHOWN))}</td>
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
  app.get("/ui/cron", (c) => respond(c, "Cron jobs", cronPart(deps.scheduler())));
  app.post("/ui/cron/:id{[0-9]+}/:action{run|pause|resume|remove}", (c) => {
    const scheduler = deps.scheduler();
    if (!scheduler) return respond(c, "Cron jobs", cronPart(undefined), 409);
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
      return respond(c, "Cron jobs", cronPart(scheduler, error.message), 409);
    }
    return respond(c, "Cron jobs", cronPart(scheduler, notice));
  });
};
