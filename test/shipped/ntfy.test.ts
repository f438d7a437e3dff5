import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

const OWNER = 502;
const NTFY_TOKEN = "tk_shippedntfytoken0123456789";

describe("shipped build: the notify tool through ntfy and Pushover", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let ntfy: NtfyFake;
  let pushover: PushoverFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    ntfy = await startNtfyFake({ token: NTFY_TOKEN });
    pushover = await startPushoverFake();
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
        notify: { pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl } },
      },
      // ntfy from the environment alone, as in a container.
      env: { NTFY_URL: ntfy.url, NTFY_TOPIC: "magpie-owner", NTFY_TOKEN },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close(), ntfy?.close(), pushover?.close()]);
  });

  it("notify reaches every configured provider; the ntfy token is never logged", async () => {
    let seen: Record<string, string> = {};
    llm.script(
      reply.toolCalls([
        { name: "notify", arguments: { message: "Garage door open", title: "Garage", priority: "high" } },
      ]),
      reply.text("Told your phone.", (body) => {
        seen = toolResults(body);
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: "tell my phone",
    });
    await waitFor(() => telegram.sentTexts().includes("Told your phone."), "the final reply", 20_000);
    expect(seen.notify).toMatch(/"ok":\s*true/);
    const [published] = await ntfy.waitFor(1);
    expect(published).toMatchObject({
      topic: "magpie-owner",
      message: "Garage door open",
      title: "Garage",
      priority: 4,
      authorization: `Bearer ${NTFY_TOKEN}`,
    });
    const [pushed] = await pushover.waitFor(1);
    expect(pushed?.fields).toMatchObject({ message: "Garage door open", priority: "1" });
    expect(bot.logText()).not.toContain(NTFY_TOKEN);
    llm.assertDone();
  });
});
