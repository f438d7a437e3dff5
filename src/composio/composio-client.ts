import { ToolError } from "../core/tool-error.js";
import type { SafeHttpClient } from "../security/safe-http.js";

const TIMEOUT_MS = 30_000;
const MAX_RESPONSE_BYTES = 2_000_000;

export interface ComposioClientOptions {
  apiKey: string;
  /** `composio.baseUrl`: the only place the key is ever sent. */
  baseUrl: string;
  /** The SSRF-guarded client; every request is pinned to the base URL's host and redirects are not followed. */
  http: SafeHttpClient;
}

/** Which API answered: v3, or v2 after v3 answered 404. */
export type ComposioApi = "v3" | "v2";

export interface ExecuteRequest {
  slug: string;
  params: Record<string, unknown>;
  entityId: string;
  connectedAccountId?: string;
}

/** Composio's REST API: v3 first, the v2 (and v1 app list) endpoints when v3 answers 404. */
export class ComposioClient {
  private readonly base: string;
  private readonly host: string;

  constructor(private readonly options: ComposioClientOptions) {
    // regex-input-bounded: composio.baseUrl from the owner's config, a short URL
    this.base = options.baseUrl.replace(/\/+$/, "");
    this.host = new URL(options.baseUrl).hostname;
  }

  /** Toolkits (no app) or one toolkit's tools. */
  async list(app: string | undefined): Promise<{ api: ComposioApi; items: unknown }> {
    const app3 = app ? `/api/v3/tools?toolkit_slug=${encodeURIComponent(app.toLowerCase())}&limit=200` : null;
    const app2 = app ? `/api/v2/actions?apps=${encodeURIComponent(app.toLowerCase())}&limit=200` : null;
    const answer = await this.withFallback(
      () => this.send("GET", app3 ?? "/api/v3/toolkits"),
      () => this.send("GET", app2 ?? "/api/v1/apps"),
    );
    return { api: answer.api, items: summarize(answer.body) };
  }

  /** Runs one tool (action) for an entity (a Composio user id). */
  async execute(request: ExecuteRequest): Promise<{ api: ComposioApi; result: unknown }> {
    const slug = encodeURIComponent(request.slug);
    const answer = await this.withFallback(
      () =>
        this.send("POST", `/api/v3/tools/execute/${slug}`, {
          arguments: request.params,
          user_id: request.entityId,
          version: "latest",
          ...(request.connectedAccountId ? { connected_account_id: request.connectedAccountId } : {}),
        }),
      () =>
        this.send("POST", `/api/v2/actions/${slug}/execute`, {
          input: request.params,
          entityId: request.entityId,
          ...(request.connectedAccountId ? { connectedAccountId: request.connectedAccountId } : {}),
        }),
    );
    return { api: answer.api, result: answer.body };
  }

  /** Starts connecting an account through an auth config; the person opens the returned URL to finish. */
  async connect(
    authConfigId: string,
    entityId: string,
  ): Promise<{ id?: string; redirectUrl?: string; status?: string }> {
    const body = (await this.send("POST", "/api/v3/connected_accounts", {
      auth_config: { id: authConfigId },
      connection: { user_id: entityId },
    })) as Record<string, unknown>;
    const redirectUrl = body.redirect_url ?? body.redirectUrl ?? body.redirect_uri;
    return {
      ...(typeof body.id === "string" ? { id: body.id } : {}),
      ...(typeof redirectUrl === "string" ? { redirectUrl } : {}),
      ...(typeof body.status === "string" ? { status: body.status } : {}),
    };
  }

  private async withFallback(
    v3: () => Promise<unknown>,
    v2: () => Promise<unknown>,
  ): Promise<{ api: ComposioApi; body: unknown }> {
    try {
      return { api: "v3", body: await v3() };
    } catch (error) {
      if (!(error instanceof ToolError) || error.code !== "composio.not_found") throw error;
      return { api: "v2", body: await v2() };
    }
  }

  private async send(method: string, path: string, body?: unknown): Promise<unknown> {
    const response = await this.options.http.request({
      url: `${this.base}${path}`,
      method,
      headers: {
        "x-api-key": this.options.apiKey,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      // The key goes to the configured host only: no other domain, and no redirect is followed.
      allowedDomains: [this.host],
      maxRedirects: 0,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      timeoutMs: TIMEOUT_MS,
    });
    const text = response.body.toString("utf8");
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // Not JSON: kept as text for the error message.
    }
    if (response.status >= 200 && response.status < 300) return parsed;
    throw statusError(response.status, method, path, parsed);
  }
}

function statusError(status: number, method: string, path: string, body: unknown): ToolError {
  if (status === 401 || status === 403)
    return new ToolError(
      "composio.unauthorized",
      `Composio rejected the API key (${status}). Check COMPOSIO_API_KEY or composio.apiKey.`,
    );
  const detail = errorDetail(body);
  if (status === 404)
    return new ToolError("composio.not_found", `Composio: ${method} ${path} not found${detail}.`);
  return new ToolError(
    "composio.request_failed",
    `Composio answered ${method} ${path} with ${status}${detail}.`,
  );
}

function errorDetail(body: unknown): string {
  if (typeof body === "string") return body ? `: ${body.slice(0, 300)}` : "";
  const record = (body ?? {}) as Record<string, unknown>;
  const error = record.error as Record<string, unknown> | string | undefined;
  const message = typeof error === "string" ? error : (error?.message ?? record.message);
  return typeof message === "string" ? `: ${message.slice(0, 300)}` : "";
}

/** The fields a model needs to pick a tool or app: slug, name, description (schemas stay out; they are large). */
function summarize(body: unknown): unknown {
  const record = (body ?? {}) as Record<string, unknown>;
  const items = Array.isArray(body) ? body : Array.isArray(record.items) ? record.items : null;
  if (!items) return body;
  return items.map((item: Record<string, unknown>) => {
    const meta = (item.meta ?? {}) as Record<string, unknown>;
    const slug = item.slug ?? item.name ?? item.key ?? item.appName;
    const description = item.description ?? meta.description;
    return {
      slug,
      ...(item.displayName || (item.name && item.name !== slug)
        ? { name: item.displayName ?? item.name }
        : {}),
      ...(typeof description === "string" ? { description: description.slice(0, 300) } : {}),
    };
  });
}
