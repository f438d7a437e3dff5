import { afterEach, describe, expect, it } from "vitest";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe("LLM requests are redacted at the boundary", () => {
  it("a configured secret typed into the chat, or echoed back in history, never reaches the provider", async () => {
    const secret = "brave-key-TYPED-91ab27";
    running = await startTestApp({ config: { tools: { web: { braveApiKey: secret } } } });
    const { llm, channel } = running;
    llm!.script(reply.text(`noted ${secret}`), reply.text("ok"));
    await channel!.receive(`my brave key is ${secret}, and base64 ${Buffer.from(secret).toString("base64")}`);
    await channel!.waitForSent(1);
    await channel!.receive("and again?");
    await channel!.waitForSent(2);
    llm!.assertDone();
    const sent = JSON.stringify(llm!.requests);
    expect(sent).toContain("my brave key is [REDACTED]");
    expect(sent).not.toContain(secret);
    expect(sent).not.toContain(Buffer.from(secret).toString("base64"));
  });
});
