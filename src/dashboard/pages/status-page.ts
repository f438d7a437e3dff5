import { html } from "hono/html";
import type { ChannelAdapter } from "../../core/types.js";
import type { PageBody } from "../layout.js";
import type { DashboardTimes } from "../time-format.js";

/** The home page's channel card: each adapter's state, detail and since when. */
export function channelsCard(channels: ReadonlyMap<string, ChannelAdapter>, times: DashboardTimes): PageBody {
  const items = [...channels].map(([name, adapter]) => {
    const status = adapter.status();
    return html`<li data-channel="${name}">
      <b>${name}</b> <span class="badge ${status.state}">${status.state}</span>
      <small>since ${times.at(status.since)}</small>
      ${status.detail ? html`<br /><small>${status.detail}</small>` : ""}
    </li>`;
  });
  return html`<section class="card" aria-labelledby="home-channels">
    <h2 id="home-channels">Channels</h2>
    ${items.length > 0 ? html`<ul class="list">${items}</ul>` : html`<p>No channel is enabled.</p>`}
  </section>`;
}
