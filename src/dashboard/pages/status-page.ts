import { html } from "hono/html";
import type { ChannelAdapter } from "../../core/types.js";
import type { PageBody } from "../layout.js";

/** Channel status: each adapter's state, detail and since when. */
export function statusPage(channels: ReadonlyMap<string, ChannelAdapter>): PageBody {
  const rows = [...channels].map(([name, adapter]) => {
    const status = adapter.status();
    return html`<tr>
      <td>${name}</td>
      <td class="${status.state}">${status.state}</td>
      <td>${status.detail ?? ""}</td>
      <td>${new Date(status.since).toISOString()}</td>
    </tr>`;
  });
  return html`<h2>Channels</h2>
    <table>
      <tr><th>Channel</th><th>State</th><th>Detail</th><th>Since</th></tr>
      ${rows.length > 0 ? rows : html`<tr><td colspan="4">No channel is enabled.</td></tr>`}
    </table>`;
}
