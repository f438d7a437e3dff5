import { randomUUID } from "node:crypto";
import { load } from "cheerio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The shipped build's rendering: the model's Markdown in the webchat and the session history (markdown-it in the
 * bundle's dashboard chunk), hostile Markdown shown as text, a turn's approval as a card with its countdown script,
 * the usage chart and the cron strip — from a real process, its ledger and its scheduler.
 */

const TOKEN = "shipped-render-token-0123456789";
const headers = { authorization: `Bearer ${TOKEN}` };

const ANSWER = [
  "Free some space:",
  "",
  "```bash",
  "df -h /srv",
  "```",
  "",
  "[docs](https://example.com/docs) [bad](javascript:alert(1)) ![pixel](https://tracker.example/p.png)",
  "<img src=x onerror=alert(1)> <script>alert(2)</script>",
].join("\n");

describe("shipped build: rendered Markdown, approval cards and charts in the dashboard", () => {
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        timezone: "Europe/Berlin",
        llm: {
          baseUrl: llm.url,
          apiKey: "sk-test",
          model: "test-model",
          maxRetries: 0,
          prices: { "test-model": { input: 1, output: 2 } },
        },
        agent: { streaming: false },
        http: { dashboard: { enabled: true, token: TOKEN } },
        security: { approvals: { require: ["shell"], timeoutSecs: 300 } },
        cron: {
          jobs: [
            { name: "heartbeat", expression: "*/2 * * * * *", message: "beat", deliver: { mode: "none" } },
          ],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await llm?.close();
  });

  const get = async (path: string) => {
    const response = await fetch(`${bot.url}${path}`, { headers });
    expect(response.status, path).toBe(200);
    return response.text();
  };
  const post = (path: string, form: Record<string, string>) =>
    fetch(`${bot.url}${path}`, { method: "POST", headers, body: new URLSearchParams(form) });

  it("the webchat and the session history show the model's Markdown rendered, and nothing in it runs or loads", async () => {
    llm.script(reply.text(ANSWER));
    expect((await post("/ui/chat", { text: "disk full?", messageId: randomUUID() })).status).toBe(200);
    const lines = await waitFor(
      async () => {
        const text = await get("/ui/chat/lines");
        return text.includes("Free some space") && text;
      },
      "the answer in the transcript",
      15_000,
    );
    for (const page of [lines, await get(`/ui/sessions/${encodeURIComponent("web:dashboard")}`)]) {
      const $ = load(page);
      const answer = $(".md").filter((_, element) => $(element).text().includes("Free some space"));
      expect(answer.find("pre > code.language-bash").text()).toBe("df -h /srv\n");
      expect(answer.find("a[href='https://example.com/docs']").attr("rel")).toContain("noreferrer");
      expect(answer.find("a.md-image").attr("href")).toBe("https://tracker.example/p.png");
      expect(answer.find("img, script")).toHaveLength(0);
      expect(answer.find("[href^='javascript']")).toHaveLength(0);
      expect(answer.text()).toContain("<script>alert(2)</script>");
    }
    llm.assertDone();
  }, 30_000);

  it("a turn's approval is a card with the exact action, the risk and its time left, and is approved from it", async () => {
    llm.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "echo card-approved" } }]),
      reply.text("Ran it."),
    );
    expect((await post("/ui/chat", { text: "run the check", messageId: randomUUID() })).status).toBe(200);
    const approvals = await waitFor(
      async () => {
        const text = await get("/ui/approvals");
        return text.includes("approval-card") && text;
      },
      "the approval card",
      15_000,
    );
    const $ = load(approvals);
    const card = $(".approval-card");
    expect(card.find("pre code").text()).toBe('shell {"command":"echo card-approved"}');
    expect(card.find("[data-risk]").text()).toBe("high risk");
    expect(card.find("[data-expires]").text()).toMatch(
      /^expires \d\d:\d\d \(in 5 min\.?\); no answer means deny$/,
    );
    expect(Number(card.find("[data-left-ms]").attr("data-left-ms"))).toBeGreaterThan(200_000);
    expect(card.find("script").attr("src")).toBe("/ui/assets/countdown.js");
    const script = await fetch(`${bot.url}/ui/assets/countdown.js`, { headers });
    expect(script.headers.get("content-type")).toContain("javascript");
    expect(await script.text()).toContain("data-left-ms");

    // The webchat shows the same card; its Approve presses the chat's button.
    const chatCard = load(await get("/ui/chat/lines"))(".approval-card");
    expect(chatCard.find("input[name=buttonId]").first().attr("value")).toBe(
      `approve:${card.attr("data-approval")}`,
    );
    expect((await post("/ui/chat/press", { buttonId: `approve:${card.attr("data-approval")}` })).status).toBe(
      200,
    );
    await waitFor(
      async () => (await get("/ui/chat/lines")).includes("Ran it."),
      "the answer after approval",
      20_000,
    );
    expect(load(await get("/ui/approvals"))(".approval-card")).toHaveLength(0);
    llm.assertDone();
  }, 40_000);

  it("usage shows 30 days of tokens and cost per model; cron shows each job's last 14 days", async () => {
    const usage = load(await get("/ui/usage"));
    expect(usage("#usage-tokens g[data-day]")).toHaveLength(30);
    expect(usage("#usage-tokens .chart-legend").text()).toContain("test-model");
    expect(usage("#usage-cost g[data-day]")).toHaveLength(30);
    expect(usage("#usage-tokens g[data-day]").last().find("rect")).toHaveLength(1);

    const cron = await waitFor(
      async () => {
        const page = load(await get("/ui/cron"));
        return page("[data-strip='heartbeat'] g[data-state='ran']").length === 1 && page;
      },
      "today's heartbeat runs in the strip",
      15_000,
    );
    expect(cron("[data-strip='heartbeat'] g[data-day]")).toHaveLength(14);
    expect(cron("[data-strip='heartbeat'] g[data-state='ran'] title").text()).toMatch(/: \d+ ok$/);
  }, 30_000);
});
