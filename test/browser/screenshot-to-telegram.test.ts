import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import type { ChatRequestBody } from "../fakes/openai.js";
import { reply } from "../fakes/openai.js";
import { hasPrograms } from "../helpers/requires.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/**
 * Issue 14 end to end: the model opens a local page in the headless system Chromium, reads it, types into it,
 * reads the change, takes a screenshot and sends it to the chat — through the real grammY client and the
 * Telegram fake, where it arrives as a photo whose bytes are a real PNG.
 */

const OWNER = { id: 777, first_name: "Alice" };
const PAGE = `<!doctype html><html><body><h1>Magpie test page</h1>
<input id="name"><button onclick="document.getElementById('out').textContent='Hello '+document.getElementById('name').value">Greet</button>
<p id="out">nobody yet</p></body></html>`;

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

const lastToolText = (body: ChatRequestBody) =>
  String(body.messages.findLast((message) => message.role === "tool")?.content ?? "");
const lastToolResult = (body: ChatRequestBody) => JSON.parse(lastToolText(body)) as Record<string, unknown>;

describe.runIf(hasPrograms("chromium"))("browser screenshot sent to Telegram", () => {
  it("open → read → type → click → read shows the change → screenshot → sent as a photo", async () => {
    const page = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(PAGE);
    });
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise<void>((resolve) => page.close(() => resolve())));
    const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
    const app = await startTelegramApp({
      access: { allowFrom: [OWNER.id] },
      config: {
        browser: { enabled: true },
        security: { ssrf: { allowHosts: ["127.0.0.1"] }, approvals: { require: [] } },
      },
    });
    cleanup.push(() => app.stop());
    const { telegram, testApp } = app;
    const llm = testApp.llm!;
    llm.script(
      reply.toolCalls([{ name: "browser", arguments: { action: "open", url } }]),
      reply.toolCalls([{ name: "browser", arguments: { action: "read" } }]),
      reply.toolCalls(
        [{ name: "browser", arguments: { action: "type", selector: "#name", text: "Magpie" } }],
        (body) => expect(lastToolText(body)).toContain("nobody yet"),
      ),
      reply.toolCalls([{ name: "browser", arguments: { action: "click", selector: "text=Greet" } }]),
      reply.toolCalls([{ name: "browser", arguments: { action: "read" } }]),
      reply.toolCalls([{ name: "browser", arguments: { action: "screenshot" } }], (body) =>
        expect(lastToolText(body)).toContain("Hello Magpie"),
      ),
      reply.toolCalls([
        {
          name: "message",
          arguments: (body: ChatRequestBody) => ({ content: "Here it is", file: lastToolResult(body).path }),
        },
      ]),
      reply.text("Sent you the screenshot."),
    );
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "show me the page" });
    await waitFor(
      () => telegram.sentTexts().includes("Sent you the screenshot."),
      "the final answer",
      20_000,
    );
    const photo = telegram.callsOf("sendPhoto").find((call) => !call.failed);
    expect(photo, "a sendPhoto call").toBeDefined();
    const bytes = photo!.uploads!.photo!.content;
    expect(bytes.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect(bytes.length).toBeGreaterThan(1000);
    llm.assertDone();
  }, 30_000);
});
