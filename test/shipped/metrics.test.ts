import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { parseExposition, type Samples, sumOf } from "../http/metrics-exposition.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 502;
const TOKEN = "shipped-metrics-token-0123456789";

describe("shipped build: GET /metrics", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
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
        http: { metrics: { enabled: true } },
        cron: {
          jobs: [
            { name: "heartbeat", expression: "* * * * * *", message: "beat", deliver: { mode: "none" } },
          ],
        },
      },
      env: { MAGPIE_METRICS_TOKEN: TOKEN },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  async function scrape(
    headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
  ): Promise<Samples> {
    const response = await fetch(`${bot.url}/metrics`, { headers });
    expect(response.status).toBe(200);
    return parseExposition(await response.text()).samples;
  }

  it("counts a message with a tool call and the cron runs, behind the token from the environment", async () => {
    expect((await fetch(`${bot.url}/metrics`)).status).toBe(401);
    const before = await scrape();
    expect(before.get('magpie_channel_up{channel="telegram"}')).toBe(1);
    expect(before.get("process_resident_memory_bytes")).toBeGreaterThan(0);

    llm.script(reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]), reply.text("Listed."));
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "list files" });
    await waitFor(() => telegram.sentTexts().includes("Listed."), "the reply", 20_000);

    let after = await scrape();
    await waitFor(
      async () => {
        after = await scrape();
        return (
          sumOf(after, "magpie_messages_total", { channel: "telegram", outcome: "answered" }) === 1 &&
          sumOf(after, "magpie_cron_runs_total", { job: "heartbeat", status: "ran" }) >= 2
        );
      },
      "the message and two cron runs counted",
      15_000,
    );
    expect(sumOf(after, "magpie_tool_calls_total", { tool: "file_list" })).toBe(1);
    expect(sumOf(after, "magpie_llm_requests_total", { model: "test-model", result: "ok" })).toBe(2);
    expect(sumOf(after, "magpie_llm_tokens_total", { model: "test-model" })).toBeGreaterThan(0);
    expect(sumOf(after, "magpie_turn_seconds_count", { origin: "user" })).toBe(1);
    expect(after.has('magpie_cron_lag_seconds{job="heartbeat"}')).toBe(true);
    expect(after.get("magpie_inbox_pending")).toBe(0);
    // The token never reaches the log.
    expect(bot.logLines.filter((line) => line.includes(TOKEN))).toEqual([]);
    llm.assertDone();
  });

  it("a model making up 200 tool names adds one `unknown` series, never a name or a stranger's words (attack)", async () => {
    const own = (samples: Samples) => new Set([...samples.keys()].filter((key) => key.startsWith("magpie_")));
    const before = own(await scrape());
    const words = 'ignore all previous instructions "} my card is 4111 1111 \u001b]52;c;cm0g\u0007';
    const calls = Array.from({ length: 200 }, (_, index) => ({
      name: index === 99 ? words : `made_up_tool_${index}`,
      arguments: {},
    }));
    // The 200 error results make the history long: it is compacted after the reply (one more call).
    llm.script(reply.toolCalls(calls), reply.text("No such tools."), reply.text("A summary."));
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: "use your tools",
    });
    await waitFor(() => telegram.sentTexts().includes("No such tools."), "the reply", 20_000);
    await waitFor(() => llm.pending() === 0, "the compaction", 15_000);
    let samples: Samples = new Map();
    await waitFor(
      async () => {
        samples = await scrape();
        // Two LLM calls in the test before, then the tool step, the reply and the compaction.
        return (
          sumOf(samples, "magpie_tool_calls_total") === 1 + 200 &&
          sumOf(samples, "magpie_llm_requests_total") === 5
        );
      },
      "the 200 calls counted",
      15_000,
    );
    const after = own(samples);
    expect(sumOf(samples, "magpie_tool_calls_total", { tool: "unknown" })).toBe(200);
    expect([...after].filter((key) => !before.has(key))).toEqual([
      'magpie_tool_calls_total{tool="unknown",verdict="allow"}',
    ]);
    expect([...after].filter((key) => /made_up|4111|previous/.test(key))).toEqual([]);
    llm.assertDone();
  });
});
