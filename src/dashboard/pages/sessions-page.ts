import { html } from "hono/html";
import { z } from "zod";
import { row } from "../../lib/row.js";
import type { ChatMessage } from "../../llm/types.js";
import type { PageBody } from "../layout.js";
import { MarkdownBudget, renderMarkdown } from "../markdown.js";
import { dashboardTimes } from "../time-format.js";
import { type PageRoutes, respond } from "./page-context.js";

const sessionRows = row(
  z.object({
    key: z.string(),
    agent: z.string(),
    updated_at: z.number(),
    messages: z.number(),
    tokens: z.number().nullable(),
  }),
  "sessions",
);
const receivedRows = row(
  z.object({
    id: z.number(),
    received_at: z.number(),
    status: z.string(),
    outcome: z.string().nullable(),
    outcome_cause: z.string().nullable(),
    text: z.string().nullable(),
  }),
  "ReceivedRow",
);

interface SessionRow {
  key: string;
  agent: string;
  updated_at: number;
  messages: number;
  tokens: number | null;
}

const SESSIONS_SHOWN = 100;
const RECEIVED_SHOWN = 50;

interface ReceivedRow {
  id: number;
  received_at: number;
  status: string;
  outcome: string | null;
  outcome_cause: string | null;
  text: string | null;
}

/** The model's words as rendered Markdown (its tool calls verbatim below them); anything else verbatim. */
function messageView(message: ChatMessage, budget: MarkdownBudget): PageBody {
  if (message.role === "assistant") {
    const calls = (message.tool_calls ?? []).map(
      (call) => `→ ${call.function.name}(${call.function.arguments})`,
    );
    const content = typeof message.content === "string" ? message.content : "";
    return html`${content ? renderMarkdown(content, budget) : ""}${
      calls.length > 0 ? html`<pre>${calls.join("\n")}</pre>` : ""
    }`;
  }
  return html`<pre>${typeof message.content === "string" ? message.content : JSON.stringify(message.content)}</pre>`;
}

/** `/ui/sessions` (every chat session, newest first) and `/ui/sessions/<key>` (its history and summary). */
export const sessionRoutes: PageRoutes = (app, deps) => {
  const times = dashboardTimes(deps.timezone);
  app.get("/ui/sessions", (c) => {
    const rows = sessionRows.all(
      deps.store.db
        .prepare(
          `SELECT s.key, s.agent, s.updated_at, COUNT(m.id) AS messages, SUM(m.tokens) AS tokens
         FROM sessions s LEFT JOIN messages m ON m.session_key = s.key
         GROUP BY s.key ORDER BY s.updated_at DESC LIMIT ${SESSIONS_SHOWN}`,
        )
        .all(),
    );
    const part = html`<div id="sessions" hx-get="/ui/sessions" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      ${
        rows.length === 0
          ? html`<p>No sessions yet.</p>`
          : html`<table>
            <tr><th>Session</th><th>Agent</th><th>Messages</th><th>Tokens</th><th>Last active</th></tr>
            ${rows.map(
              (row) => html`<tr data-session="${row.key}">
                <td data-label="Session"><a href="/ui/sessions/${encodeURIComponent(row.key)}">${row.key}</a></td>
                <td data-label="Agent">${row.agent}</td><td data-label="Messages">${row.messages}</td><td data-label="Tokens">${row.tokens ?? 0}</td>
                <td data-label="Last active">${times.at(row.updated_at)}</td>
              </tr>`,
            )}
          </table>`
      }
    </div>`;
    return respond(c, "Sessions", part);
  });

  app.get("/ui/sessions/:key", (c) => {
    const key = c.req.param("key");
    const url = `/ui/sessions/${encodeURIComponent(key)}`;
    const summary = deps.store.history.summary(key);
    const messages = deps.store.history.load(key);
    // The newest messages get the page's Markdown budget first.
    const budget = new MarkdownBudget();
    const views = [...messages]
      .reverse()
      .map(
        ({ id, message }) =>
          html`<tr data-message="${id}"><td><b>${message.role}</b></td><td>${messageView(message, budget)}</td></tr>`,
      )
      .reverse();
    // The messages received in this session, each linked to its trace (newest first).
    const received = receivedRows.all(
      deps.store.db
        .prepare(
          `SELECT id, received_at, status, outcome, outcome_cause, json_extract(payload, '$.text') AS text
         FROM inbox WHERE session_key = ? ORDER BY id DESC LIMIT ${RECEIVED_SHOWN}`,
        )
        .all(key),
    );
    const part = html`<div id="history" hx-get="${url}" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      <style>
        #history .md pre { background: var(--card); border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.5rem 0.7rem; overflow-x: auto; white-space: pre; }
        #history .md p { margin: 0.2rem 0; } #history .md { overflow-wrap: anywhere; max-width: 52rem; }
      </style>
      <p><b>${key}</b> · <a href="/ui/audit?session=${encodeURIComponent(key)}">its tool calls</a></p>
      ${
        received.length > 0
          ? html`<h2>Messages received</h2>
            <table>
              <tr><th>Received</th><th>Outcome</th><th>Message</th><th></th></tr>
              ${received.map(
                (row) => html`<tr data-inbox="${row.id}">
                  <td data-label="Received">${times.at(row.received_at)}</td>
                  <td data-label="Outcome">${row.outcome ?? row.status}${row.outcome_cause ? ` (${row.outcome_cause})` : ""}</td>
                  <td data-label="Message">${(row.text ?? "").slice(0, 120)}</td>
                  <td><a href="/ui/trace/${row.id}">trace</a></td>
                </tr>`,
              )}
            </table>`
          : ""
      }
      ${summary ? html`<h2>Summary of earlier messages</h2><pre>${summary}</pre>` : ""}
      <table>
        ${views}
      </table>
      ${messages.length === 0 ? html`<p>No messages in this session.</p>` : ""}
    </div>`;
    return respond(c, `Session ${key}`, part);
  });
};
