import { load } from "cheerio";
import { z } from "zod";
import { ToolError } from "../../core/tool-error.js";
import { SafeHttpClient } from "../../security/safe-http.js";

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface WebSearchClientOptions {
  http?: SafeHttpClient;
  /** Base URLs are constructor options so tests can point them at a local fake. */
  braveBaseUrl?: string;
  duckDuckGoBaseUrl?: string;
  timeoutMs?: number;
}

const BRAVE_BASE_URL = "https://api.search.brave.com";
const DUCKDUCKGO_BASE_URL = "https://html.duckduckgo.com";
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

const braveResponseSchema = z.object({
  web: z
    .object({
      results: z
        .array(
          z.object({ title: z.string().default(""), url: z.string(), description: z.string().default("") }),
        )
        .default([]),
    })
    .optional(),
});

/** Web search: the Brave Search API when an API key is set, DuckDuckGo's HTML results otherwise. */
export class WebSearchClient {
  private readonly http: SafeHttpClient;
  private readonly braveBaseUrl: string;
  private readonly duckDuckGoBaseUrl: string;
  private readonly timeoutMs: number;

  constructor(options: WebSearchClientOptions = {}) {
    this.http = options.http ?? new SafeHttpClient();
    this.braveBaseUrl = options.braveBaseUrl ?? BRAVE_BASE_URL;
    this.duckDuckGoBaseUrl = options.duckDuckGoBaseUrl ?? DUCKDUCKGO_BASE_URL;
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  async search(
    query: string,
    count: number,
    braveApiKey: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ provider: string; results: SearchResult[] }> {
    return braveApiKey
      ? { provider: "brave", results: await this.brave(query, count, braveApiKey, signal) }
      : { provider: "duckduckgo", results: await this.duckDuckGo(query, count, signal) };
  }

  private async brave(
    query: string,
    count: number,
    apiKey: string,
    signal?: AbortSignal,
  ): Promise<SearchResult[]> {
    const url = new URL("/res/v1/web/search", this.braveBaseUrl);
    url.searchParams.set("q", query);
    url.searchParams.set("count", String(Math.min(count, 20)));
    const response = await this.http.request({
      url: url.toString(),
      headers: { accept: "application/json", "x-subscription-token": apiKey },
      maxResponseBytes: MAX_RESPONSE_BYTES,
      timeoutMs: this.timeoutMs,
      signal,
    });
    if (response.status === 401 || response.status === 403) {
      throw new ToolError(
        "search.unauthorized",
        `Brave Search rejected the API key (${response.status}). Check BRAVE_API_KEY or tools.web.braveApiKey.`,
      );
    }
    if (response.status >= 400)
      throw new ToolError("search.failed", `Brave Search answered HTTP ${response.status}. Try again later.`);
    let json: unknown;
    try {
      json = JSON.parse(response.body.toString("utf8"));
    } catch {
      throw new ToolError("search.failed", "Brave Search returned a body that is not JSON.");
    }
    const parsed = braveResponseSchema.safeParse(json);
    if (!parsed.success)
      throw new ToolError("search.failed", "Brave Search returned an unexpected response shape.");
    return (parsed.data.web?.results ?? []).slice(0, count).map((result) => ({
      title: stripTags(result.title),
      url: result.url,
      snippet: stripTags(result.description),
    }));
  }

  private async duckDuckGo(query: string, count: number, signal?: AbortSignal): Promise<SearchResult[]> {
    const url = new URL("/html/", this.duckDuckGoBaseUrl);
    url.searchParams.set("q", query);
    const response = await this.http.request({
      url: url.toString(),
      headers: { accept: "text/html", "user-agent": "Mozilla/5.0 (compatible; Magpie/0.1)" },
      maxResponseBytes: MAX_RESPONSE_BYTES,
      timeoutMs: this.timeoutMs,
      signal,
    });
    if (response.status >= 400)
      throw new ToolError(
        "search.failed",
        `DuckDuckGo answered HTTP ${response.status}. Try again later, or set BRAVE_API_KEY.`,
      );
    return parseDuckDuckGoHtml(response.body.toString("utf8")).slice(0, count);
  }
}

function stripTags(text: string): string {
  return load(`<p>${text}</p>`)("p").text().trim();
}

/** DuckDuckGo wraps result links as //duckduckgo.com/l/?uddg=<target>; this unwraps them. */
function unwrapDuckDuckGoLink(href: string): string {
  try {
    const url = new URL(href, "https://duckduckgo.com");
    const target = url.searchParams.get("uddg");
    return target ?? url.toString();
  } catch {
    return href;
  }
}

/** Results from DuckDuckGo's HTML page (`.result` blocks, ads skipped). */
export function parseDuckDuckGoHtml(html: string): SearchResult[] {
  const $ = load(html);
  const results: SearchResult[] = [];
  $(".result").each((_, element) => {
    const block = $(element);
    if (block.hasClass("result--ad")) return;
    const link = block.find("a.result__a").first();
    const href = link.attr("href");
    if (!href) return;
    results.push({
      title: link.text().trim(),
      url: unwrapDuckDuckGoLink(href),
      snippet: block.find(".result__snippet").first().text().trim().replace(/\s+/g, " "),
    });
  });
  return results;
}
