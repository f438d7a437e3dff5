import { afterEach, describe, expect, it } from "vitest";
import { securityFeature } from "../../src/app/security-feature.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe("a turn waiting for a person holds no turn slot", () => {
  it("five chats wait on approvals while a sixth chat is answered at once (maxConcurrentTurns: 4)", async () => {
    running = await startTestApp({
      features: [securityFeature],
      config: {
        agent: { maxConcurrentTurns: 4 },
        security: { approvals: { require: ["shell"], timeoutSecs: 60 } },
      },
    });
    const { llm, channel, app } = running;
    for (let chat = 1; chat <= 5; chat++) {
      llm!.script(reply.toolCalls([{ name: "shell", arguments: { command: `echo chat-${chat}` } }]));
      await channel!.receive(`run it (${chat})`, { chatId: `chat-${chat}`, messageId: `m${chat}` });
      await waitFor(
        () => channel!.sent.filter((entry) => entry.message.text.includes("Approval needed")).length === chat,
        `approval prompt ${chat}`,
      );
    }
    expect(app.router.slots.pausedCount).toBe(5);
    expect(app.router.slots.running).toBe(0);

    llm!.script(reply.text("sixth chat answered"));
    const started = performance.now();
    await channel!.receive("hello?", { chatId: "chat-6", messageId: "m6" });
    await waitFor(() => channel!.texts().includes("sixth chat answered"), "the sixth chat's reply");
    const latencyMs = performance.now() - started;
    // Recorded for the closing note; a stalled slot would make this wait for the 60 s approval timeout.
    console.info(`sixth chat reply latency with five paused turns: ${latencyMs.toFixed(1)} ms`);
    expect(latencyMs).toBeLessThan(5_000);

    // Deny the five: each turn takes a slot back and finishes.
    for (let chat = 1; chat <= 5; chat++) llm!.script(reply.text(`chat ${chat} not run`));
    const prompts = channel!.sent.filter((entry) => entry.message.text.includes("Approval needed"));
    for (const prompt of prompts) {
      await channel!.press({ buttonId: prompt.message.buttons![0]![1]!.id, chatId: prompt.target.chatId });
    }
    await waitFor(
      () => [1, 2, 3, 4, 5].every((chat) => channel!.texts().includes(`chat ${chat} not run`)),
      "the five denied turns to finish",
    );
    expect(app.router.slots.pausedCount).toBe(0);
    llm!.assertDone();
  });
});
