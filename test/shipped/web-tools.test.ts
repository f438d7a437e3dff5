import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ComposioFake, startComposioFake } from "../fakes/composio.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

const OWNER = 501;
const COMPOSIO_KEY = "composio-shipped-key";

describe("shipped build: web tools, composio and pushover through Telegram", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let composio: ComposioFake;
  let pushover: PushoverFake;
  let site: http.Server;
  let siteUrl = "";
  const siteRequests: string[] = [];
  let bot: ShippedBot;
  const pressed = new Set<string>();
  /** Approval requests the owner was sent so far, by their text. */
  const approvalsAsked: string[] = [];

  /** Taps Approve, as the owner, on every approval request not yet answered. */
  const approvePending = () => {
    for (const call of telegram.callsOf("sendMessage")) {
      const markup = call.body.reply_markup;
      if (!markup) continue;
      const keyboard = (typeof markup === "string" ? JSON.parse(markup) : markup) as {
        inline_keyboard?: Array<Array<{ callback_data?: string }>>;
      };
      const approve = keyboard.inline_keyboard
        ?.flat()
        .find((button) => button.callback_data?.startsWith("approve:"))?.callback_data;
      if (!approve || pressed.has(approve)) continue;
      pressed.add(approve);
      approvalsAsked.push(String(call.body.text));
      telegram.pushUpdate({
        callback_query: {
          id: `cb-${pressed.size}`,
          from: { id: OWNER, is_bot: false, first_name: "Owner" },
          chat_instance: "1",
          data: approve,
          message: {
            message_id: 9_000 + pressed.size,
            date: Math.floor(Date.now() / 1000),
            chat: { id: OWNER, type: "private" },
            text: "…",
          },
        },
      });
    }
  };

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    composio = await startComposioFake(COMPOSIO_KEY);
    pushover = await startPushoverFake();
    site = http.createServer((request, response) => {
      siteRequests.push(`${request.method} ${request.url}`);
      const url = new URL(request.url ?? "/", "http://site");
      if (url.pathname === "/page") {
        response.writeHead(200, { "content-type": "text/html" });
        return response.end(
          "<html><head><title>Shed sensor</title></head><body><h1>Shed</h1><p>Temperature is 21 C.</p></body></html>",
        );
      }
      if (url.pathname === "/api/echo") {
        response.writeHead(201, { "content-type": "application/json" });
        return response.end(JSON.stringify({ echoed: request.method, query: url.searchParams.get("q") }));
      }
      if (url.pathname === "/res/v1/web/search") {
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(
          JSON.stringify({
            web: {
              results: [{ title: "Magpie docs", url: "https://docs.example/", description: "How it works" }],
            },
          }),
        );
      }
      response.writeHead(404);
      return response.end();
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        security: { ssrf: { allowHosts: ["127.0.0.1"] } },
        tools: {
          http: { enabled: true },
          web: { braveApiKey: "brave-key", braveBaseUrl: siteUrl },
        },
        composio: { baseUrl: composio.baseUrl },
        notify: { pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl } },
      },
      env: { COMPOSIO_API_KEY: COMPOSIO_KEY },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), composio?.close(), pushover?.close()]);
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  it("web_fetch, http_request, web_search, composio and pushover each reach their server and the model", async () => {
    let seen: Record<string, string> = {};
    llm.script(
      reply.toolCalls([
        { name: "web_fetch", arguments: { url: `${siteUrl}/page` } },
        { name: "http_request", arguments: { url: `${siteUrl}/api/echo?q=42`, method: "POST", body: "{}" } },
        { name: "web_search", arguments: { query: "magpie bot" } },
        { name: "composio", arguments: { action: "list" } },
        { name: "pushover", arguments: { message: "Shed is at 21 C", title: "Shed" } },
      ]),
      reply.text("All five worked.", (body) => {
        seen = toolResults(body);
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: "check the shed",
    });
    // The POST comes after the page entered the turn: the rule of two asks the owner, saying why (DESIGN.md →
    // Security → "Untrusted content"); the owner approves. Searching, listing apps and notifying the owner's own
    // phone stay free.
    await waitFor(
      () => {
        approvePending();
        return telegram.sentTexts().includes("All five worked.");
      },
      "the final reply",
      20_000,
    );
    expect(approvalsAsked).toHaveLength(1);
    expect(approvalsAsked[0]).toContain(
      `untrusted.non_get: untrusted content, after reading ${siteUrl}/page`,
    );
    expect(approvalsAsked[0]).toContain(`POST ${siteUrl}/api/echo?q=42`);

    expect(seen.web_fetch).toContain("Temperature is 21 C.");
    expect(seen.web_fetch).toContain("Shed sensor");
    expect(JSON.parse(seen.http_request ?? "{}")).toMatchObject({
      status: 201,
      body: JSON.stringify({ echoed: "POST", query: "42" }),
    });
    expect(JSON.parse(seen.web_search ?? "{}")).toMatchObject({
      provider: "brave",
      results: [{ title: "Magpie docs", url: "https://docs.example/" }],
    });
    expect(JSON.parse(seen.composio ?? "{}")).toMatchObject({ ok: true, apps: [{ slug: "github" }] });
    expect(seen.pushover).not.toMatch(/"ok":\s*false/);
    expect(siteRequests).toEqual(
      expect.arrayContaining([
        "GET /page",
        "POST /api/echo?q=42",
        expect.stringMatching(/^GET \/res\/v1\/web\/search\?q=magpie/),
      ]),
    );
    expect(composio.requests.some((request) => request.apiKey === COMPOSIO_KEY)).toBe(true);
    const [notification] = await pushover.waitFor(1);
    expect(notification?.fields.message).toBe("Shed is at 21 C");
    expect(notification?.host).toBe("api.pushover.net");
    llm.assertDone();
  });

  it("repairs a tool call whose arguments aren't valid JSON (jsonrepair, loaded on demand)", async () => {
    let seen: Record<string, string> = {};
    llm.script(
      reply.toolCalls([{ name: "web_fetch", arguments: `{url: '${siteUrl}/page', max_chars: 500,}` }]),
      reply.text("Repaired and fetched.", (body) => {
        seen = toolResults(body);
      }),
    );
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "sloppy model" });
    await waitFor(() => telegram.sentTexts().includes("Repaired and fetched."), "the reply", 20_000);
    expect(seen.web_fetch).toContain("Temperature is 21 C.");
    expect(bot.logsOf("tool-arguments-repaired")).toHaveLength(1);
    llm.assertDone();
  });

  it("the SSRF guard still refuses what allowHosts doesn't list, in the shipped build", async () => {
    let seen: Record<string, string> = {};
    llm.script(
      reply.toolCalls([
        { name: "web_fetch", arguments: { url: "http://169.254.169.254/latest/meta-data/" } },
      ]),
      reply.text("Refused as expected.", (body) => {
        seen = toolResults(body);
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: "metadata please",
    });
    await waitFor(() => telegram.sentTexts().includes("Refused as expected."), "the refusal reply", 20_000);
    expect(seen.web_fetch).toContain("ssrf.");
    llm.assertDone();
  });
});
