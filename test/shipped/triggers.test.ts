import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { hasMosquitto, type Mosquitto, startMosquitto } from "../triggers/mosquitto.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 501;
const SECRET = "shipped-webhook-secret-0123456789";

/** Triggers through the built CLI: a signed webhook, MQTT events from a real mosquitto, /triggers. */
describe.runIf(hasMosquitto())("shipped build: triggers (webhook and MQTT)", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let broker: Mosquitto;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    broker = await startMosquitto();
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
        mqtt: { url: broker.url },
        triggers: {
          deploy: {
            on: { webhook: { secret: SECRET } },
            when: "event.payload.action == 'completed'",
            do: { message: "Deploy of {{event.payload.repo}} completed" },
            deliver: { channel: "telegram", chat_id: OWNER },
          },
          hot: {
            on: { mqtt: { topic: "home/+/temperature" } },
            when: "event.payload.temperature > 30.0",
            do: { prompt: "Say how hot it is in one short sentence." },
            deliver: { channel: "telegram", chat_id: OWNER },
          },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await broker?.stop();
    await llm?.close();
    await telegram?.close();
  });

  const sent = () => telegram.callsOf("sendMessage").map((call) => String(call.body.text));

  it("a signed webhook sends its message; a forged one is refused", async () => {
    const body = JSON.stringify({ repo: "magpie", action: "completed" });
    const timestamp = Math.floor(Date.now() / 1000);
    const post = (signature: string) =>
      fetch(`${bot.url}/hooks/deploy`, {
        method: "POST",
        headers: { "x-magpie-timestamp": String(timestamp), "x-magpie-signature": signature },
        body,
      });
    expect((await post(signWebhook("x".repeat(32), timestamp, body))).status).toBe(401);
    expect((await post(signWebhook(SECRET, timestamp, body))).status).toBe(202);
    await waitFor(() => sent().includes("Deploy of magpie completed"), "the webhook's message");
  });

  it("MQTT: a cool reading does nothing; a hot one starts one agent turn whose answer arrives; /triggers counts", async () => {
    llm.script(
      reply.text("It is 31.5 °C in the attic.", (request) => {
        const user = request.messages.filter((message) => message.role === "user").at(-1)?.content ?? "";
        expect(user).toContain("<untrusted-event>");
      }),
    );
    const client = await mqtt.connectAsync(broker.url, { clientId: "shipped-test-publisher" });
    // The bot subscribes in the background once started: publish until the first reading is judged.
    await waitFor(
      async () => {
        await client.publishAsync("home/kitchen/temperature", JSON.stringify({ temperature: 22 }), {
          qos: 1,
        });
        telegram.pushMessage({
          chat: { id: OWNER, type: "private" },
          from: { id: OWNER },
          text: "/triggers",
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
        return sent().some((text) => /hot[\s\S]*filtered out [1-9]/.test(text));
      },
      "a filtered reading",
      15_000,
    );
    expect(llm.requests).toHaveLength(0);
    await client.publishAsync("home/attic/temperature", JSON.stringify({ temperature: 31.5 }), { qos: 1 });
    await client.endAsync();
    await waitFor(() => sent().includes("It is 31.5 °C in the attic."), "the agent's answer", 15_000);
    llm.assertDone();
  });
});
