import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { composioTool } from "../../src/tools/composio.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { createRegistryHarness, type RegistryHarness } from "../browser/registry-harness.js";
import { type ComposioFake, startComposioFake } from "../fakes/composio.js";

const KEY = "cmp-test-key-123456";

describe("composio tool against a Composio fake on 127.0.0.1", () => {
  let fake: ComposioFake;
  let harness: RegistryHarness;
  // Another origin on the allow-listed host: the key must never reach it.
  let thief: http.Server;
  let thiefBase: string;
  const thiefKeys: Array<string | undefined> = [];

  beforeAll(async () => {
    fake = await startComposioFake(KEY);
    thief = http.createServer((request, response) => {
      thiefKeys.push(request.headers["x-api-key"] as string | undefined);
      response.end("{}");
    });
    await new Promise<void>((resolve) => thief.listen(0, "127.0.0.1", resolve));
    thiefBase = `http://127.0.0.1:${(thief.address() as AddressInfo).port}`;
    harness = await createRegistryHarness(
      [composioTool as Tool],
      {
        composio: { baseUrl: fake.baseUrl },
        security: { ssrf: { allowHosts: ["127.0.0.1"] }, approvals: { require: ["risk:high"] } },
      },
      { env: { COMPOSIO_API_KEY: KEY } },
    );
  });
  beforeEach(() => {
    fake.requests.length = 0;
    fake.v3 = true;
    harness.approvalRequests.length = 0;
  });
  afterAll(async () => {
    await harness.cleanup();
    await fake.close();
    thief.closeAllConnections();
    await new Promise<void>((resolve) => thief.close(() => resolve()));
  });

  const call = async (args: Record<string, unknown>) => JSON.parse(await harness.call("composio", args));

  it("lists toolkits, and a toolkit's tools (v3), with the key in x-api-key", async () => {
    expect(await call({ action: "list" })).toEqual({
      ok: true,
      api: "v3",
      apps: [{ slug: "github", name: "GitHub", description: "Code hosting" }],
    });
    const tools = await call({ action: "list", app: "GitHub" });
    expect(tools.tools).toEqual([
      { slug: "GITHUB_STAR_A_REPOSITORY", name: "Star a repository", description: "Stars a repository" },
    ]);
    expect(fake.requests.map((request) => [request.path, request.apiKey])).toEqual([
      ["/api/v3/toolkits", KEY],
      ["/api/v3/tools?toolkit_slug=github&limit=200", KEY],
    ]);
  });

  it("executes a tool (v3) after asking as risk:high", async () => {
    const result = await call({
      action: "execute",
      tool_slug: "GITHUB_STAR_A_REPOSITORY",
      params: { owner: "octo", repo: "hello" },
      connected_account_id: "ca_1",
    });
    expect(result).toMatchObject({
      ok: true,
      api: "v3",
      result: { data: { starred: "GITHUB_STAR_A_REPOSITORY" } },
    });
    expect(fake.requests[0]).toMatchObject({
      method: "POST",
      path: "/api/v3/tools/execute/GITHUB_STAR_A_REPOSITORY",
      body: { arguments: { owner: "octo", repo: "hello" }, user_id: "default", connected_account_id: "ca_1" },
    });
    expect(harness.approvalRequests.map((request) => request.reason)).toContain("risk:high");
  });

  it("connects through an auth config and returns the redirect URL", async () => {
    const result = await call({ action: "connect", auth_config_id: "ac_42", entity_id: "alice" });
    expect(result).toMatchObject({
      ok: true,
      id: "ca_123",
      redirectUrl: "https://connect.composio.dev/link/ln_abc",
    });
    expect(fake.requests[0]?.body).toEqual({
      auth_config: { id: "ac_42" },
      connection: { user_id: "alice" },
    });
    expect(harness.approvalRequests).toHaveLength(1);
  });

  it("falls back to v2 when v3 answers 404", async () => {
    fake.v3 = false;
    const tools = await call({ action: "list", app: "github" });
    expect(tools).toMatchObject({ api: "v2", tools: [{ slug: "GITHUB_STAR_A_REPOSITORY" }] });
    const run = await call({ action: "execute", action_name: "GITHUB_STAR_A_REPOSITORY", params: { a: 1 } });
    expect(run).toMatchObject({ ok: true, api: "v2" });
    expect(fake.requests.map((request) => request.path)).toEqual([
      "/api/v3/tools?toolkit_slug=github&limit=200",
      "/api/v2/actions?apps=github&limit=200",
      "/api/v3/tools/execute/GITHUB_STAR_A_REPOSITORY",
      "/api/v2/actions/GITHUB_STAR_A_REPOSITORY/execute",
    ]);
    expect(fake.requests[3]?.body).toEqual({ input: { a: 1 }, entityId: "default" });
  });

  it("never sends the key elsewhere: no redirect is followed, no slug can become a path or URL", async () => {
    fake.redirectTo = `${thiefBase}/steal`;
    const redirected = await call({ action: "execute", tool_slug: "REDIRECT_ME" });
    expect(redirected.error.code).toBe("ssrf.too_many_redirects");
    for (const tool_slug of ["../../v1/steal", `${thiefBase}/x`, "A?next=http://evil"]) {
      const refused = await call({ action: "execute", tool_slug });
      expect(refused.ok, tool_slug).toBe(false);
    }
    expect(thiefKeys).toEqual([]);
    expect(fake.requests.every((request) => request.path.startsWith("/api/"))).toBe(true);
  });

  it("says when the key is rejected", async () => {
    const other = await createRegistryHarness([composioTool as Tool], {
      composio: { apiKey: "wrong-key", baseUrl: fake.baseUrl },
      security: { ssrf: { allowHosts: ["127.0.0.1"] } },
    });
    const result = JSON.parse(await other.call("composio", { action: "list" }));
    expect(result.error.code).toBe("composio.unauthorized");
    expect(result.error.message).toMatch(/COMPOSIO_API_KEY/);
    await other.cleanup();
  });

  it("is offered only with an API key (file or COMPOSIO_API_KEY)", () => {
    const parse = (env: NodeJS.ProcessEnv) =>
      parseConfig({}, { env, cwd: "/tmp", sourcePath: null, envFiles: [] });
    expect(composioTool.isEnabled?.(parse({}))).toBe(false);
    const withKey = parse({ COMPOSIO_API_KEY: KEY });
    expect(withKey.composio).toEqual({ apiKey: KEY, baseUrl: "https://backend.composio.dev" });
    expect(composioTool.isEnabled?.(withKey)).toBe(true);
  });
});
