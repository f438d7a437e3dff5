import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The shipped build's dashboard home: what the running Magpie reports about itself (version, uptime, model chain,
 * sandbox, RSS, database size), today's spend against the budgets, cron's next and failed runs, and a failed
 * message linked to its trace — all from a real process, its ledger and its scheduler, in the configured zone.
 */

const TOKEN = "shipped-home-token-0123456789";
const headers = { authorization: `Bearer ${TOKEN}` };
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

describe("shipped build: the dashboard home page", () => {
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        timezone: "Europe/Berlin",
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", maxRetries: 0 },
        // The 503 below is the failed message: answered with its notice at once, not waited out.
        agent: { streaming: false, retryOutageForSecs: 0 },
        http: { dashboard: { enabled: true, token: TOKEN } },
        budgets: { daily: { tokens: 1_000 } },
        cron: {
          jobs: [
            {
              name: "nightly-report",
              expression: "0 3 * * *",
              message: "good night",
              deliver: { mode: "none" },
            },
            // Fails every 2 s: a failed run shows up without waiting.
            {
              name: "broken-check",
              expression: "*/2 * * * * *",
              command: "false",
              deliver: { mode: "none" },
            },
          ],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await llm?.close();
  });

  const chat = (text: string) =>
    fetch(`${bot.url}/ui/chat`, {
      method: "POST",
      headers,
      body: new URLSearchParams({ text, messageId: randomUUID() }),
    });
  const home = async () => {
    const response = await fetch(`${bot.url}/`, { headers });
    expect(response.status).toBe(200);
    return response.text();
  };

  it("shows the running Magpie, its spend, cron runs and a failed message with its trace", async () => {
    llm.script(reply.text("The shed is warm."), reply.error(503, "upstream down"));
    expect((await chat("how warm is the shed?")).status).toBe(200);
    await waitFor(() => llm.pending() === 1, "the first answer", 15_000);
    expect((await chat("and the garage?")).status).toBe(200);

    const page = await waitFor(
      async () => {
        const text = await home();
        return /data-failed-message="\d+"/.test(text) && /data-problem-run="\d+"/.test(text) && text;
      },
      "the failed message and the failed cron run on the home page",
      20_000,
    );
    expect(page).toContain(`data-fact="version">${VERSION}<`);
    expect(page).toMatch(/data-fact="uptime">\d/);
    expect(page).toContain("<b>test-model</b>");
    expect(page).toContain('data-model-state="failed"');
    expect(page).toMatch(/data-fact="sandbox">\s*<span class="(ok|bad)">(on|OFF)/);
    expect(page).toMatch(/data-fact="rss">\d+(\.\d)? MB RSS/);
    expect(page).toMatch(/data-fact="database">\d+(\.\d)? (KB|MB)/);
    expect(page).toContain('data-channel="web"');
    expect(page).toContain('data-fact="spend-total">1 LLM calls · 20 tokens');
    expect(page).toContain("20 of 1,000 tokens");
    expect(page).toMatch(
      // 02:00 UTC in winter (GMT+1), 01:00 UTC in summer (GMT+2): whichever the next run is.
      /data-next-run="nightly-report"><b>nightly-report<\/b> <time datetime="[^"]+(T02:00:00.000Z" title="[\d-]+ 03:00:00 GMT\+1|T01:00:00.000Z" title="[\d-]+ 03:00:00 GMT\+2)"/,
    );
    expect(page).toMatch(/<b>broken-check<\/b> <span class="badge bad">failed \(error\)<\/span>/);

    const failed = /data-failed-message="(\d+)"/.exec(page)![1]!;
    expect(page).toContain(`<a href="/ui/trace/${failed}"`);
    const trace = await fetch(`${bot.url}/ui/trace/${failed}`, { headers });
    expect(trace.status).toBe(200);
    expect(await trace.text()).toContain('data-outcome="failed"');
    llm.assertDone();
  }, 40_000);
});
