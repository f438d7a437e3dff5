import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { hasPrograms } from "../helpers/requires.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

/**
 * The shipped build's browser (headless system Chromium: open, read, screenshot, the screenshot sent to Telegram
 * with message {file}) and its dashboard (token sign-in, the status page, the webchat's POST and server-sent
 * events answering through the model).
 */

const OWNER = 901;
const TOKEN = "shipped-dashboard-token-0123456789";
const PAGE = `<!doctype html><html><head><title>Shed panel</title></head>
<body><h1>Shed panel</h1><p id="temp">Temperature 21 C</p></body></html>`;

const lastToolText = (body: ChatRequestBody) =>
  String(body.messages.findLast((message) => message.role === "tool")?.content ?? "");

describe("shipped build: browser screenshot to Telegram, dashboard and webchat", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let page: http.Server;
  let pageUrl = "";
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    page = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(PAGE);
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
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
        browser: { enabled: true },
        security: { ssrf: { allowHosts: ["127.0.0.1"] } },
        http: { dashboard: { enabled: true, token: TOKEN } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
    page?.closeAllConnections();
    await new Promise((resolve) => page?.close(resolve));
  });

  it.runIf(hasPrograms("chromium"))(
    "browser open → read → screenshot, and message {file} sends the PNG to the chat",
    async () => {
      let read = "";
      llm.script(
        reply.toolCalls([{ name: "browser", arguments: { action: "open", url: pageUrl } }]),
        reply.toolCalls([{ name: "browser", arguments: { action: "read" } }]),
        reply.toolCalls([{ name: "browser", arguments: { action: "screenshot" } }], (body) => {
          read = lastToolText(body);
        }),
        reply.toolCalls([
          {
            name: "message",
            arguments: (body: ChatRequestBody) => ({
              content: "The shed panel",
              file: (JSON.parse(lastToolText(body)) as { path: string }).path,
            }),
          },
        ]),
        reply.text("Sent you the panel.", (body) => {
          expect(toolResults(body).message).not.toMatch(/"ok":\s*false/);
        }),
      );
      telegram.pushMessage({
        chat: { id: OWNER, type: "private" },
        from: { id: OWNER },
        text: "show me the panel",
      });
      await waitFor(() => telegram.sentTexts().includes("Sent you the panel."), "the final reply", 25_000);
      expect(read).toContain("Temperature 21 C");
      const photo = telegram.callsOf("sendPhoto").find((call) => !call.failed);
      expect(photo, "a sendPhoto call").toBeDefined();
      expect(String(photo!.body.chat_id)).toBe(String(OWNER));
      const bytes = photo!.uploads!.photo!.content;
      expect(bytes.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
      expect(bytes.length).toBeGreaterThan(1000);
      llm.assertDone();
    },
    40_000,
  );

  it("dashboard: 401 without the token or with a wrong one; ?token= signs in with a cookie and shows the status page", async () => {
    expect((await fetch(`${bot.url}/`)).status).toBe(401);
    expect((await fetch(`${bot.url}/?token=wrong-token`, { redirect: "manual" })).status).toBe(401);
    expect((await fetch(`${bot.url}/ui/chat`, { headers: { authorization: "Bearer nope" } })).status).toBe(
      401,
    );
    const signIn = await fetch(`${bot.url}/?token=${TOKEN}`, { redirect: "manual" });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("location")).toBe("/");
    const cookie = signIn.headers.get("set-cookie")?.split(";")[0] ?? "";
    expect(cookie).toMatch(/^magpie_dashboard=/);
    expect(cookie).not.toContain(TOKEN);
    const status = await fetch(`${bot.url}/`, { headers: { cookie } });
    expect(status.status).toBe(200);
    const body = await status.text();
    expect(body).toContain("<title>");
    expect(body).toContain("telegram");
    // The health checks stay open to their callers.
    expect((await fetch(`${bot.url}/readyz`)).status).toBe(200);
  });

  it("webchat: a POSTed message answers through the model, the event stream says changed, the transcript shows it", async () => {
    const signIn = await fetch(`${bot.url}/?token=${TOKEN}`, { redirect: "manual" });
    const cookie = signIn.headers.get("set-cookie")?.split(";")[0] ?? "";
    const origin = bot.url;

    // The page's live updates: an open event stream.
    const events = new AbortController();
    const stream = await fetch(`${bot.url}/ui/events`, { headers: { cookie }, signal: events.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    let received = "";
    const reader = stream.body!.getReader();
    const reading = (async () => {
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        received += decoder.decode(value, { stream: true });
      }
    })();

    try {
      await waitFor(() => received.includes("event: ready"), "the stream's ready event");
      let userText: unknown;
      llm.script(
        reply.text("The shed is at 21 C.", (body) => {
          userText = body.messages.findLast((message) => message.role === "user")?.content;
        }),
      );
      const form = new URLSearchParams({ text: "how warm is the shed?", messageId: randomUUID() });
      // A cookie-signed POST from another origin is refused (CSRF) and reaches no model.
      const forged = await fetch(`${bot.url}/ui/chat`, {
        method: "POST",
        headers: { cookie, origin: "http://evil.example" },
        body: form,
      });
      expect(forged.status).toBe(403);
      const posted = await fetch(`${bot.url}/ui/chat`, {
        method: "POST",
        headers: { cookie, origin },
        body: form,
      });
      expect(posted.status).toBe(200);
      expect(await posted.text()).toContain("how warm is the shed?");

      await waitFor(() => received.includes("event: changed"), "a changed event", 15_000);
      const lines = await waitFor(
        async () => {
          const transcript = await (await fetch(`${bot.url}/ui/chat/lines`, { headers: { cookie } })).text();
          return transcript.includes("The shed is at 21 C.") && transcript;
        },
        "the answer in the transcript",
        15_000,
      );
      expect(lines).toContain("how warm is the shed?");
      expect(userText).toContain("how warm is the shed?");
      llm.assertDone();
    } finally {
      events.abort();
      await reading;
    }
  });
});
