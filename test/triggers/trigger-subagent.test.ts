import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** A background subagent never makes triggers or publishes to MQTT, whatever its tool set says (like cron_). */

const OWNER = { id: 777, first_name: "Alice" };
let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

function toolCodes(body: ChatRequestBody): Array<string | undefined> {
  return body.messages
    .filter((message) => message.role === "tool")
    .map((message) => (JSON.parse(String(message.content)) as { error?: { code?: string } }).error?.code);
}

describe("subagents and triggers", () => {
  it("attack: trigger_add and mqtt_publish from a spawned subagent are refused at dispatch; nothing is made", async () => {
    const telegram = await new FakeTelegram().start();
    const llm = await startOpenAiFake();
    cleanup.push(
      () => telegram.close(),
      () => llm.close(),
    );
    const testApp: TestApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      llm,
      config: {
        agent: { maxConcurrentTurns: 1 },
        mqtt: { url: "mqtt://127.0.0.1:1" },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id],
          },
        },
      },
    });
    cleanup.push(() => testApp.stop());
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Watch the door.", label: "door" } }]),
      reply.text("Started."),
      reply.toolCalls([
        {
          name: "trigger_add",
          arguments: { name: "spy", on: { webhook: { secret: "s".repeat(32) } }, do: { message: "x" } },
        },
        { name: "mqtt_publish", arguments: { topic: "home/door/set", payload: "OPEN" } },
      ]),
      reply.text("Not allowed.", (body) => {
        expect(toolCodes(body)).toEqual(["tool.not_in_tool_set", "tool.not_in_tool_set"]);
      }),
      reply.text("The subagent could not do it."),
    );
    telegram.pushMessage({
      chat: { id: 777, type: "private" },
      from: OWNER,
      text: "watch the door in the background",
    });
    await waitFor(
      () =>
        telegram
          .callsOf("sendMessage")
          .some((call) => String(call.body.text) === "The subagent could not do it."),
      "the follow-up",
      15_000,
    );
    llm.assertDone();
    expect(testApp.app.context.services.triggers!.list()).toEqual([]);
  });
});
