import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

const [BIG, PAGE, OTHER] = [601, 602, 603];
const MB = 1024 * 1024;

/**
 * DESIGN.md → Input sizes, through the built CLI: "a message can slow its own turn, never the bot". A 5 MB message
 * and a page carrying a 3 MB inline image are handled while another chat is answered within seconds, and the
 * event-loop watchdog (http.maxEventLoopBlockMs: 1000) never sees the loop blocked.
 */
describe("shipped build: any input size", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let site: http.Server;
  let siteUrl = "";
  let releasePage: () => void = () => {};
  let pageRequested = false;
  let bot: ShippedBot;
  const image = randomBytes((3 * MB * 3) / 4).toString("base64");

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    site = http.createServer((_request, response) => {
      pageRequested = true;
      // Held until the test lets it go, so another chat is answered while this turn's tool runs.
      const held = new Promise<void>((resolve) => {
        releasePage = resolve;
      });
      void held.then(() => {
        response.writeHead(200, { "content-type": "text/html" });
        response.end(
          `<html><head><title>Camera</title></head><body><h1>Snapshot</h1><img alt="porch" src="data:image/png;base64,${image}"><p>After the image.</p></body></html>`,
        );
      });
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        // History stays uncompacted here (the cut message alone is ~25,000 tokens): no summary calls to script.
        agent: { streaming: false, historyTokens: 400_000 },
        http: { maxEventLoopBlockMs: 1000 },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [BIG, PAGE, OTHER],
          },
        },
        security: { ssrf: { allowHosts: ["127.0.0.1"] } },
      },
      files: {
        "workspace/notes/aaa.txt": `${"a".repeat(100_000)}b\nmagpie line\n`,
        "workspace/ab/random.txt": Array.from(randomBytes(MB), (byte) => (byte & 1 ? "a" : "b")).join(""),
      },
    });
  }, 60_000);

  afterAll(async () => {
    releasePage();
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  const healthz = async () => (await fetch(`${bot.url}/healthz`)).status;
  const repliesTo = (chat: number) =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && Number(call.body.chat_id) === chat)
      .map((call) => String(call.body.text));

  it("a 5 MB message is cut to agent.maxInboundChars with the rest in the workspace, and another chat is answered meanwhile", async () => {
    const big = `START ${"lorem ipsum dolor ".repeat((5 * MB) / 18)} END`;
    llm.script(reply.text("answered"), reply.text("answered"));
    const sentAt = Date.now();
    telegram.pushMessage({ chat: { id: BIG, type: "private" }, from: { id: BIG }, text: big });
    telegram.pushMessage({ chat: { id: OTHER, type: "private" }, from: { id: OTHER }, text: "quick one" });
    await waitFor(() => repliesTo(OTHER).includes("answered"), "the other chat's reply", 30_000);
    const otherLatencyMs = Date.now() - sentAt;
    await waitFor(() => repliesTo(BIG).includes("answered"), "the big message's reply", 30_000);
    expect(await healthz()).toBe(200);
    console.log(`input size: other chat answered ${otherLatencyMs} ms after a 5 MB message arrived with it`);
    expect(otherLatencyMs).toBeLessThan(10_000);

    const bigRequest = llm.requests.find((request) =>
      request.messages.some((message) => String(message.content ?? "").includes("START lorem")),
    );
    const userText = String(bigRequest?.messages.at(-1)?.content ?? "");
    expect(userText.length).toBeLessThan(110_000);
    const file = /workspace file (inbound\/\S+\.txt)/.exec(userText)?.[1];
    expect(file, userText.slice(-300)).toBeDefined();
    const rest = readFileSync(path.join(bot.workspace, file!), "utf8");
    expect(rest.endsWith(" END")).toBe(true);
    expect(100_000 + rest.length).toBe(big.length);
    llm.assertDone();
  });

  it("a page with a 3 MB inline image: another chat is answered while the fetch runs, the model gets the text", async () => {
    let seen: Record<string, string> = {};
    llm.script(reply.toolCalls([{ name: "web_fetch", arguments: { url: `${siteUrl}/camera` } }]));
    telegram.pushMessage({
      chat: { id: PAGE, type: "private" },
      from: { id: PAGE },
      text: "check the camera",
    });
    await waitFor(() => pageRequested, "the page request", 20_000);

    llm.script(reply.text("meanwhile"));
    const sentAt = Date.now();
    telegram.pushMessage({ chat: { id: OTHER, type: "private" }, from: { id: OTHER }, text: "still there?" });
    await waitFor(() => repliesTo(OTHER).includes("meanwhile"), "the other chat's reply", 20_000);
    expect(Date.now() - sentAt).toBeLessThan(10_000);

    llm.script(
      reply.text("camera read", (body) => {
        seen = toolResults(body);
      }),
    );
    const releasedAt = Date.now();
    releasePage();
    await waitFor(() => repliesTo(PAGE).includes("camera read"), "the camera reply", 30_000);
    const pageTurnMs = Date.now() - releasedAt;
    expect(await healthz()).toBe(200);
    console.log(`input size: 3 MB inline-image page fetched and read in ${pageTurnMs} ms`);
    expect(seen.web_fetch).toContain("After the image.");
    expect(seen.web_fetch).toContain("[image: porch]");
    expect(seen.web_fetch).not.toContain(image.slice(0, 64));
    expect(bot.logsOf("event-loop-blocked")).toEqual([]);
    llm.assertDone();
  });

  it("file_grep runs the model's regex on RE2 in a worker of the bundle: (a+)+$ answers at once, an automaton-defeating pattern is stopped, the bot keeps time", async () => {
    let seen: Record<string, string> = {};
    llm.script(
      reply.toolCalls([{ name: "file_grep", arguments: { pattern: "(a+)+$", path: "notes" } }]),
      reply.toolCalls([{ name: "file_grep", arguments: { pattern: "(?:.{0,50}a){20}$", path: "ab" } }]),
      reply.toolCalls([{ name: "file_grep", arguments: { pattern: "magpie", path: "notes" } }]),
      reply.text("grepped", (body) => {
        seen = toolResults(body);
      }),
    );
    const slow = llm.requests.length;
    telegram.pushMessage({ chat: { id: OTHER, type: "private" }, from: { id: OTHER }, text: "grep it" });
    await waitFor(() => llm.requests.length > slow + 1, "the second request", 20_000);
    // While the worker runs the slow pattern, the bot's own loop answers.
    const started = Date.now();
    while (Date.now() - started < 2_000) {
      expect(await healthz()).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await waitFor(() => repliesTo(OTHER).includes("grepped"), "the grep reply", 30_000);
    const requests = llm.requests.slice(slow);
    expect(JSON.parse(toolResults(requests[1]!).file_grep!)).toMatchObject({
      matches: [],
      files_searched: 1,
    });
    expect(toolResults(requests[2]!).file_grep).toContain("grep.pattern_too_slow");
    expect(seen.file_grep).toContain("magpie line");
    expect(bot.logsOf("event-loop-blocked")).toEqual([]);
    llm.assertDone();
  });
});
