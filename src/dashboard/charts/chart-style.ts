import { html } from "hono/html";

/** The charts' own CSS (the layout's stays generic): included once by each page that shows a chart. */
export const CHART_STYLE = html`<style>
  .chart { margin: 0 0 1.5rem; max-width: 45rem; }
  .chart > svg { width: 100%; height: auto; display: block; }
  .chart svg text { fill: var(--fg); }
  .chart-grid { stroke: var(--line); } .chart-axis { stroke: var(--muted); } .chart-segment { stroke: var(--bg); }
  .cron-none { fill: var(--bg); stroke: var(--muted); stroke-width: 1.5; }
  .chart-legend { list-style: none; padding: 0; margin: 0.4rem 0; display: flex; flex-wrap: wrap; gap: 0.3rem 1rem; }
  .chart-legend li { display: flex; align-items: center; gap: 0.35rem; }
  .chart-table { overflow-x: auto; }
  .chart-table td, .chart-table th { white-space: nowrap; }
  .chart-total { font-size: 1.1rem; margin: 0.3rem 0 0.8rem; }
  .cron-strips { display: grid; grid-template-columns: minmax(6rem, max-content) auto; gap: 0.5rem 1rem; align-items: center; margin-bottom: 0.5rem; }
  .cron-strips svg { max-width: 100%; height: auto; }
  .cron-strip-name { overflow-wrap: anywhere; }
  @media (max-width: 40rem) { .cron-strips { grid-template-columns: 1fr; gap: 0.15rem; } .cron-strips > div[data-strip] { margin-bottom: 0.5rem; } }
</style>`;
