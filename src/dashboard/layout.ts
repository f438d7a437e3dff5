import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** What a page hands the layout: its title and body. */
export type PageBody = HtmlEscapedString | Promise<HtmlEscapedString>;

const NAV: Array<[string, string]> = [
  ["/", "Home"],
  ["/ui/chat", "Chat"],
  ["/ui/approvals", "Approvals"],
  ["/ui/sessions", "Sessions"],
  ["/ui/cron", "Cron"],
  ["/ui/memory", "Memory"],
  ["/ui/audit", "Audit"],
  ["/ui/usage", "Usage"],
];

/**
 * The dashboard's CSS, for a desktop and a phone (390 px: no sideways scrolling, tap targets of at least 44 px)
 * in light and dark (`prefers-color-scheme`); the colours keep WCAG AA contrast in both. Class names are shared
 * with every page (docs/_drafts/dash-home.md lists them): keep them stable.
 */
const STYLE = `
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1c21; --muted: #555663; --line: #d5d6de; --card: #f5f6f9; --field: #ffffff;
  --accent: #1f4fb8; --nav: #1e2233; --nav-fg: #ffffff; --nav-current: #3a4366;
  --ok: #0b6b2e; --bad: #b3261e; --warn: #865100; --button: #e7e9f0; --button-fg: #1b1c21;
  --primary: #1f4fb8; --primary-fg: #ffffff; --danger: #a8231b; --danger-fg: #ffffff;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #121318; --fg: #e6e7ee; --muted: #a9abba; --line: #363845; --card: #1b1d25; --field: #0f1015;
    --accent: #92b4ff; --nav: #0b0c11; --nav-fg: #f2f3f8; --nav-current: #2c3352;
    --ok: #74d495; --bad: #ff8f85; --warn: #f2b45c; --button: #2b2e3a; --button-fg: #e6e7ee;
    --primary: #92b4ff; --primary-fg: #0b0c11; --danger: #ff8f85; --danger-fg: #0b0c11;
  }
}
* { box-sizing: border-box; }
body { font: 16px/1.45 system-ui, sans-serif; margin: 0; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
nav { background: var(--nav); padding: 0.25rem 0.5rem; display: flex; flex-wrap: wrap; gap: 0.1rem 0.25rem; }
nav a { color: var(--nav-fg); text-decoration: none; min-height: 44px; min-width: 44px; padding: 0 0.75rem;
  display: inline-flex; align-items: center; border-radius: 0.4rem; }
nav a[aria-current="page"] { background: var(--nav-current); text-decoration: underline; text-underline-offset: 0.3em; }
main { padding: 1rem; max-width: 90rem; }
h1 { font-size: 1.5rem; margin: 0.25rem 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.25rem 0 0.5rem; }
table { border-collapse: collapse; max-width: 100%; }
td, th { border-bottom: 1px solid var(--line); padding: 0.35rem 0.6rem; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; max-width: 50rem; font-size: 0.9rem; }
code { overflow-wrap: anywhere; }
form { display: inline; } ul { margin: 0; padding-left: 1.1rem; }
button, input, select, textarea { font: inherit; color: var(--fg); background: var(--field);
  border: 1px solid var(--muted); border-radius: 0.4rem; min-height: 44px; max-width: 100%; }
input, select { padding: 0 0.6rem; } textarea { width: 100%; max-width: 50rem; padding: 0.5rem; display: block; }
button { min-width: 44px; padding: 0 1rem; margin: 0.15rem 0.25rem 0.15rem 0; cursor: pointer;
  background: var(--button); color: var(--button-fg); border-color: var(--line); }
button.primary { background: var(--primary); color: var(--primary-fg); border-color: var(--primary); }
button.danger { background: var(--danger); color: var(--danger-fg); border-color: var(--danger); }
small, .muted { color: var(--muted); }
.ok, .connected { color: var(--ok); } .bad, .failed { color: var(--bad); } .warn, .reconnecting { color: var(--warn); }
.badge { display: inline-block; padding: 0 0.5rem; border-radius: 1rem; border: 1px solid currentColor;
  font-size: 0.85rem; }
.actions { display: flex; flex-wrap: wrap; gap: 0.25rem; align-items: center; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 19rem), 1fr)); gap: 1rem; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 0.6rem; padding: 0.75rem 1rem;
  min-width: 0; }
.card h2 { margin: 0 0 0.5rem; font-size: 1.05rem; }
.card h3 { margin: 0.75rem 0 0.25rem; font-size: 0.95rem; font-weight: 600; }
.card.wide { grid-column: 1 / -1; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 0.75rem; margin: 0; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
.list { list-style: none; padding: 0; margin: 0; }
.list > li { padding: 0.4rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.list > li:last-child { border-bottom: 0; }
meter { width: 100%; height: 1rem; }
[role="status"] { font-weight: 600; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
@media (max-width: 40rem) {
  main { padding: 0.75rem; }
  table, tbody, tr, td { display: block; width: 100%; }
  tr:has(> th) { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  tr { border-bottom: 1px solid var(--line); padding: 0.4rem 0; }
  td { border: 0; padding: 0.15rem 0; }
  td[data-label]::before { content: attr(data-label); display: block; color: var(--muted); font-size: 0.85rem; }
  td:empty { display: none; }
}
`;

/** The page shell: navigation (the current page marked), htmx (served by the dashboard itself) and the CSS. */
export function layout(title: string, body: PageBody, currentPath = ""): PageBody {
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="color-scheme" content="light dark" />
    <title>${title} · Magpie</title>
    <script src="/ui/assets/htmx.min.js" defer></script>
    <script src="/ui/assets/live.js" defer></script>
    <style>${raw(STYLE)}</style>
  </head>
  <body>
    <nav aria-label="Dashboard">${NAV.map(
      ([href, label]) =>
        html`<a href="${href}"${isCurrent(href, currentPath) ? raw(' aria-current="page"') : ""}>${label}</a>`,
    )}</nav>
    <main><h1>${title}</h1>${body}</main>
  </body>
</html>`;
}

function isCurrent(href: string, currentPath: string): boolean {
  if (href === "/") return currentPath === "/";
  return currentPath === href || currentPath.startsWith(`${href}/`);
}
