import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** What a page hands the layout: its title and body. */
export type PageBody = HtmlEscapedString | Promise<HtmlEscapedString>;

const NAV: Array<[string, string]> = [
  ["/", "Status"],
  ["/ui/chat", "Chat"],
  ["/ui/approvals", "Approvals"],
  ["/ui/sessions", "Sessions"],
  ["/ui/cron", "Cron"],
  ["/ui/memory", "Memory"],
  ["/ui/audit", "Audit"],
  ["/ui/usage", "Usage"],
];

/** The page shell: navigation, htmx (served by the dashboard itself) and a little CSS. */
export function layout(title: string, body: PageBody): PageBody {
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${title} · Magpie</title>
    <script src="/ui/assets/htmx.min.js" defer></script>
    <script src="/ui/assets/live.js" defer></script>
    <style>
      body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
      nav { background: #223; padding: 0.5rem 1rem; }
      nav a { color: #fff; margin-right: 1rem; text-decoration: none; }
      main { padding: 1rem; }
      table { border-collapse: collapse; }
      td, th { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
      pre { white-space: pre-wrap; margin: 0; max-width: 50rem; }
      form { display: inline; } ul { margin: 0; padding-left: 1rem; }
      .connected { color: #080; } .failed { color: #b00; } .reconnecting { color: #a60; }
    </style>
  </head>
  <body>
    <nav>${NAV.map(([href, label]) => html`<a href="${href}">${label}</a>`)}</nav>
    <main><h1>${title}</h1>${body}</main>
  </body>
</html>`;
}
