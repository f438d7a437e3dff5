import { afterEach, describe, expect, it } from "vitest";
import { TelegramChannel } from "../../channels/telegram.js";
import { features } from "../../src/app/features.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { channelDeps } from "../channels/helpers.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** How long the bot sits idle. Real time: the channel's long polling and the scheduler's timers really run. */
const IDLE_WINDOW_MS = 3_000;

let running: TestApp | null = null;
let telegram: FakeTelegram | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
  await telegram?.close();
  telegram = null;
});

describe("idle costs nothing", () => {
  it("a connected bot with every feature on makes no LLM and no embedding request while nothing happens", async () => {
    telegram = await new FakeTelegram().start();
    const adapter = new TelegramChannel(
      channelDeps({ telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false } }),
    );
    running = await startTestApp({
      features,
      channel: null,
      adapters: [adapter],
      config: {
        llm: { embeddingModel: "embed-model" },
        channels: { telegram: { allowFrom: ["777"] } },
        // A job that exists but is not due (03:00 on 1 January).
        cron: { jobs: [{ name: "new year", expression: "0 3 1 1 *", prompt: "Happy new year." }] },
      },
    });
    const { app, llm } = running;
    await waitFor(() => adapter.status().state === "connected", "Telegram connected");
    const scheduler = app.context.services.scheduler as Scheduler;
    expect(scheduler.list()).toHaveLength(1);
    expect(app.commands.get("usage")).toBeDefined();

    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    // The scheduler's own check finds nothing due, whenever it runs.
    await scheduler.tick();

    expect(telegram.callsOf("getUpdates").length).toBeGreaterThan(0);
    expect(llm!.requests).toHaveLength(0);
    expect(llm!.embeddingRequests).toHaveLength(0);
    expect(llm!.errors).toEqual([]);
    expect(app.store.db.prepare("SELECT COUNT(*) FROM llm_usage").pluck().get()).toBe(0);
  });
});
