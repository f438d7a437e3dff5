import { randomUUID } from "node:crypto";
import { html } from "hono/html";
import type { WebChannel, WebChatEntry } from "../../../channels/web.js";
import type { Button } from "../../core/types.js";
import type { HttpApp } from "../../http/server.js";
import {
  approvalCard,
  askerOf,
  type DecisionButton,
  decisionButton,
  serveCountdownScript,
} from "../approval-card.js";
import type { PageBody } from "../layout.js";
import { MarkdownBudget, renderMarkdown } from "../markdown.js";
import { type DashboardTimes, dashboardTimes } from "../time-format.js";
import { type DashboardDeps, respond } from "./page-context.js";

const APPROVAL_BUTTON = /^(approve|deny):([a-z0-9]+)$/;

/** The webchat's and rendered Markdown's own CSS, on the layout's colours (light and dark). */
const CHAT_STYLE = html`<style>
  #chat-lines > div { margin: 0 0 0.9rem; max-width: 52rem; }
  .chat-owner .chat-text { background: var(--card); border: 1px solid var(--line); border-radius: 0.6rem; padding: 0.4rem 0.7rem; }
  .md { overflow-wrap: anywhere; }
  .md p { margin: 0.3rem 0; }
  .md pre { background: var(--card); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.5rem 0.7rem; overflow-x: auto; white-space: pre; max-width: 100%; }
  .md code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
  .md :not(pre) > code { background: var(--card); border: 1px solid var(--line); border-radius: 0.25rem; padding: 0 0.25rem; }
  .md pre.md-plain { white-space: pre-wrap; }
  .md blockquote { border-left: 3px solid var(--line); margin: 0.3rem 0; padding-left: 0.7rem; color: var(--muted); }
  .md table { border-collapse: collapse; } .md td, .md th { border: 1px solid var(--line); }
  .chat-buttons { display: flex; flex-wrap: wrap; gap: 0.6rem; margin-top: 0.3rem; }
  #chat-send { display: flex; gap: 0.5rem; align-items: flex-end; flex-wrap: wrap; margin-top: 1rem; }
  #chat-send textarea { flex: 1 1 16rem; }
</style>`;

/** A button of a chat line, pressed through the webchat as a chat's button would be. */
function pressButton(button: Button): PageBody {
  return html`<form method="post" action="/ui/chat/press" hx-post="/ui/chat/press" hx-target="#chat" hx-swap="outerHTML">
    <input type="hidden" name="buttonId" value="${button.id}" /><button type="submit">${button.label}</button>
  </form>`;
}

/** The approval a line's Approve / Deny buttons decide, if the line has them. */
function approvalIdOf(entry: WebChatEntry): string | undefined {
  for (const button of (entry.buttons ?? []).flat()) {
    const id = APPROVAL_BUTTON.exec(button.id)?.[2];
    if (id) return id;
  }
  return undefined;
}

/**
 * One line: the owner's text as typed (escaped, verbatim), Magpie's as rendered Markdown; a line asking for an
 * approval becomes the approval's card (its buttons press through the chat, so the answer lands here too).
 */
function entryView(
  entry: WebChatEntry,
  deps: DashboardDeps | undefined,
  budget: MarkdownBudget,
  now: number,
  times: DashboardTimes | undefined,
): PageBody {
  const approvalId = approvalIdOf(entry);
  const record = approvalId ? deps?.approvals()?.repository.get(approvalId) : undefined;
  const body =
    deps && record
      ? approvalCard(
          { record, askedBy: askerOf(deps.store.db, record), timezone: deps.timezone, now },
          chatDecisionButton(record.id),
        )
      : html`<div class="chat-text">${entry.from === "owner" ? html`<pre>${entry.text}</pre>` : renderMarkdown(entry.text, budget)}</div>
      ${(entry.buttons ?? []).map((row) => html`<div class="chat-buttons">${row.map(pressButton)}</div>`)}`;
  return html`<div class="chat-${entry.from}" data-chat-line="${entry.id}">
    <b>${entry.from === "owner" ? "you" : "magpie"}</b> <small>${times ? times.at(entry.at) : new Date(entry.at).toISOString()}</small>
    ${body}
  </div>`;
}

function chatDecisionButton(id: string): DecisionButton {
  return (decision, label, record) =>
    html`<form method="post" action="/ui/chat/press" hx-post="/ui/chat/press" hx-target="#chat" hx-swap="outerHTML">
      <input type="hidden" name="buttonId" value="${decision}:${id}" />${decisionButton(decision, label, record)}
    </form>`;
}

/** The transcript's lines; the newest get the page's Markdown budget first (an old line past it shows plain). */
function linesView(channel: WebChannel, deps: DashboardDeps | undefined): PageBody {
  const budget = new MarkdownBudget();
  const now = Date.now();
  const times = deps ? dashboardTimes(deps.timezone, () => now) : undefined;
  const views = channel
    .transcript()
    .reverse()
    .map((entry) => entryView(entry, deps, budget, now, times));
  return html`${views.reverse()}`;
}

/** The transcript (refreshed on every change) and a form whose id makes a resent message a duplicate. */
function chatPart(channel: WebChannel, deps: DashboardDeps | undefined, notice?: string): PageBody {
  return html`<div id="chat">
    ${CHAT_STYLE}
    <div id="chat-lines" hx-get="/ui/chat/lines" hx-trigger="magpie:changed from:body" hx-swap="innerHTML">
      ${linesView(channel, deps)}
    </div>
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    <form id="chat-send" method="post" action="/ui/chat" hx-post="/ui/chat" hx-target="#chat" hx-swap="outerHTML">
      <input type="hidden" name="messageId" value="${randomUUID()}" />
      <textarea name="text" rows="2" cols="60" aria-label="Message" placeholder="Message Magpie (/help for commands)" required autofocus></textarea>
      <button type="submit">Send</button>
    </form>
  </div>`;
}

/**
 * `/ui/chat`: the webchat, a `web` channel whose sender is the dashboard's owner. Without `deps` an approval shows
 * as its message and buttons rather than as a card.
 */
export function chatRoutes(app: HttpApp, channel: WebChannel, deps?: DashboardDeps): void {
  serveCountdownScript(app);
  app.get("/ui/chat", (c) => respond(c, "Chat", chatPart(channel, deps)));
  app.get("/ui/chat/lines", (c) => c.html(linesView(channel, deps)));
  app.post("/ui/chat", async (c) => {
    const form = await c.req.parseBody();
    const text = typeof form.text === "string" ? form.text.trim() : "";
    const messageId = typeof form.messageId === "string" ? form.messageId : "";
    if (!text || !/^[0-9a-f-]{36}$/.test(messageId)) {
      return respond(c, "Chat", chatPart(channel, deps, "Type a message first."), 409);
    }
    const result = await channel.receive(text, messageId);
    const notice =
      result.status === "denied" || result.status === "rejected" ? `Not taken: ${result.reason}` : undefined;
    return respond(c, "Chat", chatPart(channel, deps, notice));
  });
  app.post("/ui/chat/press", async (c) => {
    const form = await c.req.parseBody();
    if (typeof form.buttonId === "string") await channel.press(form.buttonId);
    return respond(c, "Chat", chatPart(channel, deps));
  });
}
