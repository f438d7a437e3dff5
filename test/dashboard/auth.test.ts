import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebChannel } from "../../channels/web.js";
import type { Messenger } from "../../src/core/messenger.js";
import { mountDashboard } from "../../src/dashboard/create-dashboard.js";
import { registerHealthRoutes } from "../../src/http/health.js";
import { HttpServer } from "../../src/http/server.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { ChatApprovalGate } from "../../src/security/approval-gate.js";
import { Store } from "../../src/store/index.js";

const TOKEN = "test-dashboard-token-0123456789";
const messenger: Messenger = { send: () => 1, waitForDelivery: async () => "sent" };

let server: HttpServer;
let store: Store;
let gate: ChatApprovalGate;
let url: string;

beforeEach(async () => {
  store = Store.open(":memory:");
  gate = new ChatApprovalGate({
    store,
    messenger,
    logger: silentLogger(),
    redactor: new Redactor(),
    authority: () => ({ roleOf: () => "guest", mayDeliver: () => true }),
  });
  server = new HttpServer(silentLogger());
  registerHealthRoutes(server.app, { store, adapters: () => new Map(), started: () => true });
  mountDashboard(
    server.app,
    {
      token: TOKEN,
      store,
      timezone: "UTC",
      channels: () => new Map(),
      approvals: () => gate,
      questions: () => undefined,
      scheduler: () => undefined,
      memory: () => undefined,
      defaultAgent: () => "main",
      clock: { now: () => Date.now() },
      appId: "auth-test",
      startedAt: Date.now(),
      modelChain: () => null,
      sandbox: async () => ({ mode: "off", active: false, reason: "tools.shell.sandbox is off" }),
      budgets: () => ({}),
    },
    new WebChannel(store.kv),
  );
  server.route("POST", "/telegram/webhook", (_request, response) => void response.writeHead(200).end("hook"));
  const address = await server.listen(0, "127.0.0.1");
  url = `http://127.0.0.1:${address.port}`;
});

afterEach(async () => {
  await server.close();
  store.close();
});

async function signIn(): Promise<string> {
  const response = await fetch(`${url}/?token=${TOKEN}`, { redirect: "manual" });
  expect(response.status).toBe(303);
  expect(response.headers.get("location")).toBe("/");
  const cookie = response.headers.get("set-cookie") ?? "";
  expect(cookie).toMatch(/HttpOnly/);
  expect(cookie).toMatch(/SameSite=Strict/);
  expect(cookie).not.toContain(TOKEN);
  return cookie.split(";")[0]!;
}

const ask = (action = "rm -rf build/") =>
  gate.request({
    sessionKey: "telegram:42",
    target: { channel: "telegram", chatId: "42" },
    approver: { channel: "telegram", userId: "7", role: "owner" },
    tool: "shell",
    action,
    reason: "risk:high",
    timeoutMs: 60_000,
  });

describe("dashboard sign-in", () => {
  it("answers 401 and no data without a token, with a wrong token, cookie or bearer", async () => {
    const pending = ask("secret-action-text");
    for (const [path, init] of [
      ["/", {}],
      ["/ui/approvals", {}],
      ["/ui/assets/htmx.min.js", {}],
      ["/?token=wrong", {}],
      ["/ui/approvals", { headers: { cookie: "magpie_dashboard=forged" } }],
      ["/ui/approvals", { headers: { cookie: `magpie_dashboard=${TOKEN}` } }],
      ["/ui/approvals", { headers: { authorization: "Bearer wrong" } }],
      ["/ui/approvals", { headers: { authorization: `Basic ${TOKEN}` } }],
    ] as const) {
      const response = await fetch(`${url}${path}`, { ...init, redirect: "manual" });
      expect(response.status, path).toBe(401);
      expect(await response.text()).not.toContain("secret-action-text");
    }
    gate.decideFromDashboard(gate.repository.recent(1)[0]!.id, "denied");
    await pending;
  });

  it("leaves health checks and webhooks open", async () => {
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect(await (await fetch(`${url}/telegram/webhook`, { method: "POST" })).text()).toBe("hook");
  });

  it("signs a browser in with ?token= (cookie) and a script with a Bearer header", async () => {
    const cookie = await signIn();
    expect((await fetch(`${url}/`, { headers: { cookie } })).status).toBe(200);
    const script = await fetch(`${url}/ui/approvals`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(script.status).toBe(200);
    expect(await script.text()).toContain("Nothing waits for approval");
    const htmx = await fetch(`${url}/ui/assets/htmx.min.js`, { headers: { cookie } });
    expect(htmx.headers.get("content-type")).toMatch(/javascript/);
    expect((await htmx.text()).length).toBeGreaterThan(10_000);
  });

  it("approves a pending request from the dashboard; a cross-origin post is refused", async () => {
    const cookie = await signIn();
    const decision = ask();
    const id = gate.repository.recent(1)[0]!.id;
    const page = await (await fetch(`${url}/ui/approvals`, { headers: { cookie } })).text();
    expect(page).toContain(id);
    expect(page).toContain("rm -rf build/");

    const forged = await fetch(`${url}/ui/approvals/${id}/approve`, {
      method: "POST",
      headers: { cookie, origin: "https://evil.example" },
    });
    expect(forged.status).toBe(403);
    const noOrigin = await fetch(`${url}/ui/approvals/${id}/approve`, {
      method: "POST",
      headers: { cookie },
    });
    expect(noOrigin.status).toBe(403);
    expect(gate.repository.get(id)?.status).toBe("pending");

    const approved = await fetch(`${url}/ui/approvals/${id}/approve`, {
      method: "POST",
      headers: { cookie, origin: url },
    });
    expect(approved.status).toBe(200);
    expect(await decision).toBe("approved");
    expect(gate.repository.get(id)).toMatchObject({ status: "approved", decidedBy: "dashboard" });
    const again = await fetch(`${url}/ui/approvals/${id}/deny`, {
      method: "POST",
      headers: { cookie, origin: url },
    });
    expect(again.status).toBe(409);
  });
});

describe("dashboard audit log", () => {
  it("filters by tool, verdict and session", async () => {
    const at = Date.now();
    const base = { arguments: "{}", outcome: "ok" as const, durationMs: 1, at };
    store.audit.record({
      ...base,
      tool: "shell",
      verdict: "allow",
      sessionKey: "telegram:1",
      arguments: '{"cmd":"ls"}',
    });
    store.audit.record({
      ...base,
      tool: "shell",
      verdict: "deny",
      sessionKey: "telegram:2",
      arguments: '{"cmd":"rm"}',
    });
    store.audit.record({
      ...base,
      tool: "web_fetch",
      verdict: "allow",
      sessionKey: "telegram:1",
      arguments: '{"url":"x"}',
    });
    const headers = { authorization: `Bearer ${TOKEN}` };
    const rows = async (query: string) =>
      [
        ...(await (await fetch(`${url}/ui/audit${query}`, { headers })).text()).matchAll(
          /data-audit="(\d+)"/g,
        ),
      ].map((match) => Number(match[1]));
    expect(await rows("")).toEqual([3, 2, 1]);
    expect(await rows("?tool=shell")).toEqual([2, 1]);
    expect(await rows("?tool=shell&verdict=deny")).toEqual([2]);
    expect(await rows("?session=telegram%3A1")).toEqual([3, 1]);
    expect(await rows("?tool=nothing")).toEqual([]);
    expect(await rows("?tool=shell' OR 1=1 --")).toEqual([]);
  });

  it("streams a change event when an audit row is added", async () => {
    const response = await fetch(`${url}/ui/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    let text = "";
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) text += new TextDecoder().decode((await reader.read()).value);
    };
    await readUntil("event: ready");
    store.audit.record({ tool: "shell", verdict: "allow", outcome: "ok", arguments: "{}", durationMs: 1 });
    await readUntil("event: changed");
    await reader.cancel();
  });
});
