import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import type { WebSearchClient } from "./web/web-search-client.js";

/** One client per config (the base URLs and the SSRF allow-list come from it). */
const clients = new WeakMap<object, WebSearchClient>();

export const webSearchTool = defineTool({
  name: "web_search",
  description:
    "Search the web. Returns results as {title, url, snippet}. Uses the Brave Search API when BRAVE_API_KEY is set, DuckDuckGo otherwise. Follow up with web_fetch to read a result.",
  inputSchema: z.object({
    query: z.string().min(1).describe("Search terms."),
    count: z.number().int().min(1).max(20).optional().describe("Number of results (default 5)."),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    refuseOutboundLeak(context, [{ kind: "query", value: input.query }]);
    // The client (and cheerio behind it) loads on the first search, not at start-up.
    const [{ WebSearchClient }, { safeHttpOf }] = await Promise.all([
      import("./web/web-search-client.js"),
      import("./web/safe-http-of.js"),
    ]);
    const { web } = context.config.tools;
    let client = context.services.webSearch ?? clients.get(context.config);
    if (!client) {
      client = new WebSearchClient({
        http: safeHttpOf(context),
        braveBaseUrl: web.braveBaseUrl,
        duckDuckGoBaseUrl: web.duckDuckGoBaseUrl,
      });
      clients.set(context.config, client);
    }
    const { provider, results } = await client.search(
      input.query,
      input.count ?? 5,
      web.braveApiKey,
      context.signal,
    );
    return { query: input.query, provider, count: results.length, results };
  },
});
