import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 704;

/**
 * Inbound liveness through the shipped build: the Telegram fake keeps its sockets open but stops answering long
 * polls. The bot notices within `silentAfterSecs`, abandons the hung poll and polls again, `/readyz` answers 503
 * naming telegram, `magpie_channel_up{channel="telegram"}` drops to 0, and the owner gets one ntfy message; when the
 * fake answers again the owner gets one "back" note and a message is answered. A SIGTERM while the polls hang still
 * exits 0 within the 10 s DESIGN promises.
 */
describe("shipped build: a Telegram long poll that hangs", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let bot: ShippedBot;

  const readyz = async () => {
    const response = await fetch(`${bot.url}/readyz`);
    return { status: response.status, body: (await response.json()) as { down: string[] } };
  };
  const channelUp = async () => {
    const text = await (await fetch(`${bot.url}/metrics`)).text();
    return /^magpie_channel_up\{channel="telegram"\} (\d)$/m.exec(text)?.[1];
  };
  const titled = (title: string) => ntfy.messages.filter((message) => message.title === title);

  beforeAll(async () => {
    [telegram, llm, ntfy] = await Promise.all([
      new FakeTelegram().start(),
      startOpenAiFake(),
      startNtfyFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        timezone: "UTC",
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        http: { metrics: { enabled: true } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
            silentAfterSecs: 2,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), ntfy?.close()]);
  });

  it("is detected, reconnected, named by /readyz and /metrics, told once, and answers after recovery", async () => {
    expect(await channelUp()).toBe("1");
    telegram.stallReceives();
    const down = await waitFor(
      async () => {
        const answer = await readyz();
        return answer.status === 503 && answer.body;
      },
      "/readyz 503",
      15_000,
    );
    expect(down.down).toEqual(["telegram"]);
    expect(await channelUp()).toBe("0");
    await waitFor(() => titled("Magpie: Telegram is down").length === 1, "the ntfy alert", 15_000);
    await waitFor(() => bot.logsOf("channel-silent").length >= 2, "a second reconnect", 15_000);
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(bot.logsOf("channel-silent")[0]).toMatchObject({ channel: "telegram", limitSecs: 2 });

    telegram.resumeReceives();
    await waitFor(async () => (await readyz()).status === 200, "ready again", 15_000);
    expect(await channelUp()).toBe("1");
    await waitFor(() => titled("Magpie: Telegram is back").length === 1, "the back note", 5_000);

    llm.script(reply.text("Heard you after the stall."));
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "hello?" });
    await waitFor(() => telegram.sentTexts().includes("Heard you after the stall."), "the answer", 15_000);
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(titled("Magpie: Telegram is back")).toHaveLength(1);
  }, 90_000);

  it("stops with exit 0 within 10 s while the long poll hangs", async () => {
    telegram.stallReceives();
    await waitFor(async () => (await readyz()).status === 503, "down again", 15_000);
    const started = Date.now();
    const code = await bot.stop();
    const tookMs = Date.now() - started;
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(10_000);
  }, 40_000);
});
