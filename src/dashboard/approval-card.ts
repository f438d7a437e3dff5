import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { z } from "zod";
import type { HttpApp } from "../http/server.js";
import { revealInvisible } from "../lib/reveal-invisible.js";
import { row } from "../lib/row.js";
import type { ApprovalRecord } from "../security/approval-store.js";
import type { Db } from "../store/index.js";
import type { PageBody } from "./layout.js";
import { dashboardTimes } from "./time-format.js";

const askerRow = row(
  z.object({ user_id: z.union([z.string(), z.number()]).nullable(), user_name: z.string().nullable() }),
  "approval-card",
);

/**
 * An approval as a card: the tool, the exact action (escaped, in a code block), the risk, who asked, and the time
 * left — "expires 14:32 (in 4 min)" without JavaScript, ticking with the few lines of `COUNTDOWN_SCRIPT`. The
 * Approve / Deny buttons are at least 44 px (WCAG 2.5.5). Shown on the approvals page and in the webchat; the home
 * page may show it too (`approvalCard` with `dashboardDecisionButtons`).
 */

/** What a card shows besides the stored record. */
export interface ApprovalCardView {
  record: ApprovalRecord;
  /** "Alice (telegram:42)"; null when the chat's last message is gone (retention) or there was none (a job). */
  askedBy: string | null;
  timezone: string;
  now: number;
}

/** Renders a card's Approve or Deny control: a form that posts where the page wants it. */
export type DecisionButton = (
  decision: "approve" | "deny",
  label: string,
  record: ApprovalRecord,
) => PageBody;

/** The button inside a decision form: big, coloured by the layout (primary / danger), named for screen readers. */
export function decisionButton(
  decision: "approve" | "deny",
  label: string,
  record: ApprovalRecord,
): PageBody {
  return html`<button type="submit" class="${decision === "approve" ? "primary" : "danger"}" aria-label="${label} ${record.tool} (${record.id})">${label}</button>`;
}

export const COUNTDOWN_SCRIPT_PATH = "/ui/assets/countdown.js";

/**
 * Ticks every `[data-left-ms]` once a second. Counts from when the element appeared (not the server's clock, which
 * may differ from the browser's); runs once however often a refreshed part brings the script tag back.
 */
export const COUNTDOWN_SCRIPT = `(() => {
  if (globalThis.magpieCountdown) return;
  globalThis.magpieCountdown = true;
  const words = (ms) => {
    const seconds = Math.ceil(ms / 1000);
    if (seconds < 60) return seconds + " s";
    const minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + String(seconds % 60).padStart(2, "0") + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  };
  const tick = () => {
    for (const element of document.querySelectorAll("[data-left-ms]")) {
      element.dataset.seenAt ??= String(Date.now());
      const left = Number(element.dataset.leftMs) - (Date.now() - Number(element.dataset.seenAt));
      element.textContent = left > 0 ? "in " + words(left) : "time is up";
    }
  };
  tick();
  setInterval(tick, 1000);
})();
`;

const served = new WeakSet<HttpApp>();

/** Serves the countdown script once per app, whichever page that shows cards registers first. */
export function serveCountdownScript(app: HttpApp): void {
  if (served.has(app)) return;
  served.add(app);
  app.get(COUNTDOWN_SCRIPT_PATH, (c) =>
    c.body(COUNTDOWN_SCRIPT, 200, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "private, max-age=86400",
    }),
  );
}

/** The card's own CSS, on the layout's colours (light and dark) and button classes. */
const CARD_STYLE = html`<style>
  .approval-card { border: 2px solid var(--warn); border-radius: 0.6rem; padding: 0.75rem 1rem; margin: 0.6rem 0; max-width: 46rem; background: var(--card); }
  .approval-card.decided { border-color: var(--line); }
  .approval-card h3 { margin: 0 0 0.5rem; font-size: 1.1rem; display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
  .approval-card pre { background: var(--field); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.5rem 0.7rem; max-width: none; }
  .approval-card dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 0.8rem; margin: 0.6rem 0; }
  .approval-card dt { color: var(--muted); } .approval-card dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
  .approval-buttons { display: flex; flex-wrap: wrap; gap: 0.75rem; }
  .approval-buttons button { min-height: 48px; min-width: 8rem; font-weight: 600; }
  @media (max-width: 40rem) { .approval-card dl { grid-template-columns: 1fr; } .approval-card dd { margin-bottom: 0.3rem; } .approval-buttons button { flex: 1 1 8rem; } .approval-buttons form { display: flex; flex: 1 1 8rem; } }
</style>`;

const RISK_TONE: Record<string, string> = { high: "bad", medium: "warn", low: "ok" };

/** "high risk" from `risk:high`, with the layout's tone for it; another reason (a guard's) as it is. */
export function riskOf(reason: string): { label: string; tone: string } {
  const level = /^risk:(low|medium|high)$/.exec(reason)?.[1];
  return level ? { label: `${level} risk`, tone: RISK_TONE[level]! } : { label: reason, tone: "warn" };
}

/**
 * Who asked: the sender of the last message received in the approval's session up to the request (the inbox keeps
 * who sent what); null when there is none — a job's run, or a message retention already pruned.
 */
export function askerOf(db: Db, record: ApprovalRecord): string | null {
  const row = askerRow.one(
    db
      .prepare(
        `SELECT json_extract(payload, '$.userId') AS user_id, json_extract(payload, '$.userName') AS user_name
       FROM inbox WHERE session_key = ? AND received_at <= ? ORDER BY id DESC LIMIT 1`,
      )
      .get(record.sessionKey, record.requestedAt),
  );
  if (!row || row.user_id === null) return null;
  const id = `${record.channel}:${row.user_id}`;
  return row.user_name ? `${row.user_name} (${id})` : id;
}

/** Where htmx puts the approvals route's answer: the approvals page swaps its whole part (the default). */
export interface DecisionSwap {
  target: string;
  /** Only this part of the answer (e.g. `[role=status]`, the notice), when set. */
  select?: string;
  swap?: string;
}

/**
 * The Approve / Deny forms posting to `/ui/approvals/<id>/approve|deny` (one place decides). The home page can show
 * a card too: `dashboardDecisionButtons(id, { target: "#home-notice", select: "[role=status]", swap: "innerHTML" })`.
 */
export function dashboardDecisionButtons(
  id: string,
  where: DecisionSwap = { target: "#approvals", swap: "outerHTML" },
): DecisionButton {
  return (decision, label, record) => {
    const url = `/ui/approvals/${id}/${decision}`;
    return html`<form method="post" action="${url}" hx-post="${url}" hx-target="${where.target}" hx-swap="${where.swap ?? "outerHTML"}"${
      where.select ? html` hx-select="${where.select}"` : ""
    }>
      ${decisionButton(decision, label, record)}
    </form>`;
  };
}

/** One approval as a card; the buttons only while it is pending and not yet expired. */
export function approvalCard(
  view: ApprovalCardView,
  button: DecisionButton,
): HtmlEscapedString | Promise<HtmlEscapedString> {
  const { record, now } = view;
  const times = dashboardTimes(view.timezone, () => now);
  const risk = riskOf(record.reason);
  const clock = new Intl.DateTimeFormat("en-GB", {
    timeZone: view.timezone,
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const open = record.status === "pending" && record.expiresAt > now;
  const expiresAt = (at: number) =>
    html`expires <time datetime="${new Date(at).toISOString()}" title="${times.exact(at)}">${clock.format(at)}</time>`;
  const titleId = `approval-${record.id}-title`;
  return html`<article class="approval-card${open ? "" : " decided"}" data-approval="${record.id}" aria-labelledby="${titleId}">
    ${CARD_STYLE}
    <h3 id="${titleId}">${open ? "Approval needed" : "Approval"}: <code>${revealInvisible(record.tool)}</code>
      <span class="badge ${risk.tone}" data-risk>${risk.label}</span></h3>
    <pre class="approval-action"><code>${record.action}</code></pre>
    <dl>
      <dt>Asked by</dt><dd>${view.askedBy ?? "—"}</dd>
      <dt>Chat</dt><dd>${record.channel}:${record.chatId} <small>(session ${record.sessionKey})</small></dd>
      <dt>Asked</dt><dd>${times.at(record.requestedAt)}</dd>
      ${
        open
          ? html`<dt>Time left</dt><dd data-expires>${expiresAt(record.expiresAt)} (<span role="timer" data-left-ms="${record.expiresAt - now}">${times.relative(record.expiresAt)}</span>); no answer means deny</dd>`
          : html`<dt>Decision</dt><dd data-status="${record.status}">${statusWords(record)}${
              record.decidedAt ? html` ${times.at(record.decidedAt)}` : ""
            }</dd>`
      }
      <dt>Request</dt><dd><code>${record.id}</code></dd>
    </dl>
    ${
      open
        ? html`<div class="approval-buttons">${button("approve", "Approve", record)}${button("deny", "Deny", record)}</div>
          <script src="${COUNTDOWN_SCRIPT_PATH}"></script>`
        : ""
    }
  </article>`;
}

function statusWords(record: ApprovalRecord): string {
  switch (record.status) {
    case "approved":
      return `Approved by ${record.decidedBy ?? "an owner"}`;
    case "denied":
      return `Denied by ${record.decidedBy ?? "an owner"}`;
    case "timeout":
      return "Timed out (denied)";
    case "cancelled":
      return "Cancelled (the turn stopped)";
    default:
      return "Expired, waiting to be closed";
  }
}
