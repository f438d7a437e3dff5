import { randomUUID } from "node:crypto";
import { html } from "hono/html";
import type { WebChannel, WebChatEntry } from "../../../channels/web.js";
import type { HttpApp } from "../../http/server.js";
import type { PageBody } from "../layout.js";
import { respond } from "./page-context.js";

function entryView(entry: WebChatEntry): PageBody {
  return html`<div class="chat-${entry.from}" data-chat-line="${entry.id}">
    <b>${entry.from === "owner" ? "you" : "magpie"}</b> <small>${new Date(entry.at).toISOString()}</small>
    <pre>${entry.text}</pre>
    ${(entry.buttons ?? []).map((row) =>
      row.map(
        (
          button,
        ) => html`<form method="post" action="/ui/chat/press" hx-post="/ui/chat/press" hx-target="#chat" hx-swap="outerHTML">
          <input type="hidden" name="buttonId" value="${button.id}" /><button type="submit">${button.label}</button>
        </form>`,
      ),
    )}
  </div>`;
}

/** The transcript (refreshed on every change) and a form whose id makes a resent message a duplicate. */
function chatPart(channel: WebChannel, notice?: string): PageBody {
  return html`<div id="chat">
    <div id="chat-lines" hx-get="/ui/chat/lines" hx-trigger="magpie:changed from:body" hx-swap="innerHTML">
      ${channel.transcript().map(entryView)}
    </div>
    ${notice ? html`<p role="status">${notice}</p>` : ""}
    <form method="post" action="/ui/chat" hx-post="/ui/chat" hx-target="#chat" hx-swap="outerHTML">
      <input type="hidden" name="messageId" value="${randomUUID()}" />
      <textarea name="text" rows="2" cols="60" placeholder="Message Magpie (/help for commands)" required autofocus></textarea>
      <button type="submit">Send</button>
    </form>
  </div>`;
}

/** `/ui/chat`: the webchat, a `web` channel whose sender is the dashboard's owner. */
export function chatRoutes(app: HttpApp, channel: WebChannel): void {
  app.get("/ui/chat", (c) => respond(c, "Chat", chatPart(channel)));
  app.get("/ui/chat/lines", (c) => c.html(html`${channel.transcript().map(entryView)}`));
  app.post("/ui/chat", async (c) => {
    const form = await c.req.parseBody();
    const text = typeof form.text === "string" ? form.text.trim() : "";
    const messageId = typeof form.messageId === "string" ? form.messageId : "";
    if (!text || !/^[0-9a-f-]{36}$/.test(messageId)) {
      return respond(c, "Chat", chatPart(channel, "Type a message first."), 409);
    }
    const result = await channel.receive(text, messageId);
    const notice =
      result.status === "denied" || result.status === "rejected" ? `Not taken: ${result.reason}` : undefined;
    return respond(c, "Chat", chatPart(channel, notice));
  });
  app.post("/ui/chat/press", async (c) => {
    const form = await c.req.parseBody();
    if (typeof form.buttonId === "string") await channel.press(form.buttonId);
    return respond(c, "Chat", chatPart(channel));
  });
}
