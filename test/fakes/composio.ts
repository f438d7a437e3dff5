import http from "node:http";
import type { AddressInfo } from "node:net";

/** One request the fake received. */
export interface RecordedComposioRequest {
  method: string;
  /** Path and query, e.g. `/api/v3/tools?toolkit_slug=github&limit=200`. */
  path: string;
  apiKey: string | undefined;
  body: unknown;
}

export interface ComposioFake {
  /** `http://127.0.0.1:<port>`: give it as composio.baseUrl. */
  baseUrl: string;
  requests: RecordedComposioRequest[];
  /** false: every /api/v3 path answers 404, as an older deployment would. */
  v3: boolean;
  /** Where `POST …/execute/REDIRECT_ME` redirects to (a key-stealing host, in a test). */
  redirectTo: string | null;
  close(): Promise<void>;
}

/** A Composio REST API fake on 127.0.0.1 (v3 tools, toolkits, execute, connected accounts; v2 actions; v1 apps). */
export async function startComposioFake(apiKey: string): Promise<ComposioFake> {
  const fake: ComposioFake = {
    baseUrl: "",
    requests: [],
    v3: true,
    redirectTo: null,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const path = request.url ?? "/";
    const key = request.headers["x-api-key"];
    fake.requests.push({
      method: request.method ?? "",
      path,
      apiKey: typeof key === "string" ? key : undefined,
      body: text ? JSON.parse(text) : undefined,
    });
    const reply = (status: number, payload: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(payload));
    };
    if (key !== apiKey) return reply(401, { error: { message: "Invalid API key" } });
    const url = new URL(path, "http://composio");
    const route = `${request.method} ${url.pathname}`;
    if (url.pathname.startsWith("/api/v3/") && !fake.v3)
      return reply(404, { error: { message: "Not found" } });
    if (route.endsWith("/REDIRECT_ME") || route.endsWith("/REDIRECT_ME/execute")) {
      response.writeHead(302, { location: fake.redirectTo ?? "/" });
      return response.end();
    }
    switch (route) {
      case "GET /api/v3/toolkits":
        return reply(200, {
          items: [{ slug: "github", name: "GitHub", meta: { description: "Code hosting" } }],
        });
      case "GET /api/v3/tools":
        return reply(200, {
          items: [
            {
              slug: "GITHUB_STAR_A_REPOSITORY",
              name: "Star a repository",
              description: "Stars a repository",
              toolkit: { slug: url.searchParams.get("toolkit_slug") },
              input_parameters: { type: "object" },
            },
          ],
          next_cursor: null,
        });
      case "GET /api/v2/actions":
        return reply(200, {
          items: [
            {
              name: "GITHUB_STAR_A_REPOSITORY",
              displayName: "Star a repository",
              description: "Stars a repository",
              appName: url.searchParams.get("apps"),
            },
          ],
        });
      case "GET /api/v1/apps":
        return reply(200, { items: [{ key: "github", name: "github", description: "Code hosting" }] });
      case "POST /api/v3/connected_accounts":
        return reply(201, {
          id: "ca_123",
          status: "INITIATED",
          redirect_url: "https://connect.composio.dev/link/ln_abc",
        });
    }
    const v3Execute = /^POST \/api\/v3\/tools\/execute\/([A-Z0-9_]+)$/.exec(route);
    if (v3Execute) return reply(200, { data: { starred: v3Execute[1] }, successful: true, error: null });
    const v2Execute = /^POST \/api\/v2\/actions\/([A-Z0-9_]+)\/execute$/.exec(route);
    if (v2Execute) return reply(200, { data: { starred: v2Execute[1] }, successfull: true, error: null });
    reply(404, { error: { message: `no route ${route}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
