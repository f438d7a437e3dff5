import { html } from "hono/html";
import type { ChatMessage } from "../../llm/types.js";
import { type PageRoutes, respond } from "./page-context.js";

interface SessionRow {
  key: string;
  agent: string;
  updated_at: number;
  messages: number;
  tokens: number | null;
}

const SESSIONS_SHOWN = 100;

function messageText(message: ChatMessage): string {
  if (message.role === "assistant" && message.tool_calls?.length) {
    const calls = message.tool_calls.map((call) => `→ ${call.function.name}(${call.function.arguments})`);
    return [message.content ?? "", ...calls].filter(Boolean).join("\n");
  }
  return typeof message.content === "string" ? message.content : JSON.stringify(message.content);
}

/** `/ui/sessions` (every chat session, newest first) and `/ui/sessions/<key>` (its history and summary). */
export const sessionRoutes: PageRoutes = (app, deps) => {
  app.get("/ui/sessions", (c) => {
    const rows = deps.store.db
      .prepare(
        `SELECT s.key, s.agent, s.updated_at, COUNT(m.id) AS messages, SUM(m.tokens) AS tokens
         FROM sessions s LEFT JOIN messages m ON m.session_key = s.key
         GROUP BY s.key ORDER BY s.updated_at DESC LIMIT ${SESSIONS_SHOWN}`,
      )
      .all() as SessionRow[];
    const part = html`<div id="sessions" hx-get="/ui/sessions" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      ${
        rows.length === 0
          ? html`<p>No sessions yet.</p>`
          : html`<table>
            <tr><th>Session</th><th>Agent</th><th>Messages</th><th>Tokens</th><th>Last active</th></tr>
            ${rows.map(
              (row) => html`<tr data-session="${row.key}">
                <td><a href="/ui/sessions/${encodeURIComponent(row.key)}">${row.key}</a></td>
                <td>${row.agent}</td><td>${row.messages}</td><td>${row.tokens ?? 0}</td>
                <td>${new Date(row.updated_at).toISOString()}</td>
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
    const part = html`<div id="history" hx-get="${url}" hx-trigger="magpie:changed from:body" hx-swap="outerHTML">
      <p><b>${key}</b> · <a href="/ui/audit?session=${encodeURIComponent(key)}">its tool calls</a></p>
      ${summary ? html`<h2>Summary of earlier messages</h2><pre>${summary}</pre>` : ""}
      <table>
        ${messages.map(
          ({ id, message }) =>
            html`<tr data-message="${id}"><th>${message.role}</th><td><pre>${messageText(message)}</pre></td></tr>`,
        )}
      </table>
      ${messages.length === 0 ? html`<p>No messages in this session.</p>` : ""}
    </div>`;
    return respond(c, `Session ${key}`, part);
  });
};
