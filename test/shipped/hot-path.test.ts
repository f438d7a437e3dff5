import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

const OWNER = 601;
const skill = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\n---\n# ${name}\n\nSteps.\n`;

/**
 * Issue 35, cost on the hot path, through the shipped build: what a turn reads on the way to its LLM request is kept
 * between turns where nothing changed (the skills directories' verdicts, recall's term frequencies) — and a skill
 * added or edited, or a memory stored, between two messages is in the very next request.
 */
describe("shipped build: the hot path sees every change on the next turn", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  let skills: string;

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
      },
    });
    skills = path.join(bot.workspace, "skills");
    mkdirSync(path.join(skills, "deploy"), { recursive: true });
    writeFileSync(path.join(skills, "deploy", "SKILL.md"), skill("deploy", "Deploy the site"));
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  /** Sends `text` as the owner (the model first calls `calls`, if any); resolves with the first request's system prompt. */
  async function turn(
    text: string,
    answer: string,
    calls: Array<{ name: string; arguments: unknown }> = [],
  ): Promise<string> {
    let system = "";
    const capture = (body: { messages: Array<{ content?: unknown }> }) => {
      system = String(body.messages[0]?.content);
    };
    llm.script(
      ...(calls.length > 0
        ? [reply.toolCalls(calls, capture), reply.text(answer)]
        : [reply.text(answer, capture)]),
    );
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text });
    await waitFor(() => telegram.sentTexts().includes(answer), answer, 20_000);
    return system;
  }

  it("a skill added or edited, and a memory stored, between two messages are in the next request", async () => {
    const before = await turn("what about the zebra firmware?", "No idea yet.");
    expect(before).toContain("- deploy: Deploy the site");
    expect(before).not.toContain("garden");
    expect(before).not.toContain("ZEBRA-V7");

    // Stored by a turn, not a core memory: only keyword recall (whose term frequencies are kept) can find it.
    await turn("remember the zebra firmware", "Stored.", [
      {
        name: "memory_store",
        arguments: { key: "zebra.firmware", content: "The zebra firmware is ZEBRA-V7.", category: "daily" },
      },
    ]);
    writeFileSync(path.join(skills, "deploy", "SKILL.md"), skill("deploy", "Deploy the site with rsync"));
    mkdirSync(path.join(skills, "garden"));
    writeFileSync(path.join(skills, "garden", "SKILL.md"), skill("garden", "Water the garden"));

    const after = await turn("what about the zebra firmware?", "It is V7.");
    expect(after).toContain("- deploy: Deploy the site with rsync");
    expect(after).toContain("- garden: Water the garden");
    expect(after).toContain("ZEBRA-V7");
    llm.assertDone();
  });
});
