import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { mcpFeature } from "../../src/app/mcp-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

/**
 * What the core and its features take over from a reload (MagpieApp.reload): access lists, groups and who is an
 * owner; agents, routes and the router's settings; approvals; budgets; restart-only keys kept and reported.
 */

let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

/** The running app's config with `overrides` (same data dir), as a reload reads the file. */
const reload = (testApp: TestApp, overrides: ConfigInput) =>
  testApp.app.reload(
    testConfig(
      { ...overrides, llm: { baseUrl: testApp.llm?.url, apiKey: "sk-test", ...overrides.llm } },
      testApp.dataDir,
    ),
  );

const telegram = (rules: Record<string, unknown>): ConfigInput =>
  ({ channels: { telegram: { token: "123:abc", dmPolicy: "allowlist", ...rules } } }) as ConfigInput;

describe("reload: access", () => {
  it("a stranger added to allowFrom is answered; removed again, refused; a group added to groups is answered", async () => {
    const channel = new RecordingChannel("telegram");
    running = await startTestApp({
      channel,
      features: [accessFeature],
      access: undefined,
      authority: undefined,
      config: telegram({ allowFrom: ["100"], groupPolicy: "allowlist", groups: [] }),
    });
    const app = running;
    const stranger = { userId: "200", chatId: "200" };
    expect(await channel.receive("hello?", { ...stranger, messageId: "s1" })).toMatchObject({
      status: "denied",
    });
    expect(app.app.context.ports.authority().roleOf("telegram", "200")).toBe("guest");

    const added = await reload(
      app,
      telegram({ allowFrom: ["100", "200"], groupPolicy: "allowlist", groups: [] }),
    );
    expect(added.applied).toEqual(["channels.telegram.allowFrom"]);
    app.llm!.script(reply.text("hi stranger"));
    expect(await channel.receive("hello again", { ...stranger, messageId: "s2" })).toMatchObject({
      status: "accepted",
    });
    await channel.waitForSent(1);
    expect(channel.texts()).toEqual(["hi stranger"]);
    expect(app.app.context.ports.authority().roleOf("telegram", "200")).toBe("owner");

    await reload(app, telegram({ allowFrom: ["100"], groupPolicy: "allowlist", groups: [] }));
    expect(await channel.receive("still there?", { ...stranger, messageId: "s3" })).toMatchObject({
      status: "denied",
    });
    expect(app.app.context.ports.authority().roleOf("telegram", "200")).toBe("guest");

    const group = { userId: "100", chatId: "-500", isDirect: false, mentionsBot: true };
    expect(await channel.receive("group hi", { ...group, messageId: "g1" })).toMatchObject({
      status: "denied",
    });
    await reload(app, telegram({ allowFrom: ["100"], groupPolicy: "allowlist", groups: ["-500"] }));
    app.llm!.script(reply.text("hi group"));
    expect(await channel.receive("group hi", { ...group, messageId: "g2" })).toMatchObject({
      status: "accepted",
    });
    await channel.waitForSent(2);
    expect(channel.texts()).toEqual(["hi stranger", "hi group"]);
    app.llm!.assertDone();
  });
});

describe("reload: guests and pairing", () => {
  it("security.guestToolSet widened: a guest's next turn is offered the tool; dmPolicy pairing: a stranger gets a code", async () => {
    const channel = new RecordingChannel("telegram");
    running = await startTestApp({
      channel,
      features: [accessFeature],
      access: undefined,
      authority: undefined,
      config: { ...telegram({ allowFrom: ["100"], dmPolicy: "open" }), security: { guestToolSet: [] } },
    });
    const app = running;
    const toolsOf = (index: number) =>
      (app.llm!.requests[index]!.tools ?? []).map((tool) => tool.function.name);
    const guest = { userId: "300", chatId: "300" };
    app.llm!.script(reply.text("no tools for you"), reply.text("one tool"));
    await channel.receive("what can you do?", { ...guest, messageId: "q1" });
    await channel.waitForSent(1);
    expect(toolsOf(0)).not.toContain("file_list");

    await reload(app, {
      ...telegram({ allowFrom: ["100"], dmPolicy: "open" }),
      security: { guestToolSet: ["file_list"] },
    });
    await channel.receive("and now?", { ...guest, messageId: "q2" });
    await channel.waitForSent(2);
    expect(toolsOf(1)).toContain("file_list");
    expect(toolsOf(1)).not.toContain("file_write");

    await reload(app, telegram({ allowFrom: ["100"], dmPolicy: "pairing" }));
    expect(await channel.receive("hello", { userId: "400", chatId: "400", messageId: "p1" })).toMatchObject({
      status: "denied",
    });
    await channel.waitForSent(3);
    expect(channel.texts()[2]).toMatch(/pairing code is [A-Z0-9]+/);
    app.llm!.assertDone();
  });
});

describe("reload: skills offered to guests", () => {
  it("security.guestToolSet gaining invoke_skill lists the skills in a guest's next prompt", async () => {
    const channel = new RecordingChannel("telegram");
    running = await startTestApp({
      channel,
      features: [accessFeature, mcpFeature],
      access: undefined,
      authority: undefined,
      config: { ...telegram({ allowFrom: ["100"], dmPolicy: "open" }), security: { guestToolSet: [] } },
    });
    const app = running;
    const skillDir = path.join(app.app.config.workspace, "skills", "greenhouse");
    mkdirSync(skillDir, { recursive: true });
    writeFileSync(
      path.join(skillDir, "SKILL.md"),
      "---\nname: greenhouse\ndescription: Water the greenhouse\n---\n# greenhouse\n\nSteps.\n",
    );
    const systemOf = (index: number) => String(app.llm!.requests[index]!.messages[0]!.content);
    const guest = { userId: "300", chatId: "300" };
    app.llm!.script(reply.text("first"), reply.text("second"));
    await channel.receive("hi", { ...guest, messageId: "s1" });
    await channel.waitForSent(1);
    expect(systemOf(0)).not.toContain("Water the greenhouse");

    await reload(app, {
      ...telegram({ allowFrom: ["100"], dmPolicy: "open" }),
      security: { guestToolSet: ["invoke_skill"] },
    });
    await channel.receive("and now?", { ...guest, messageId: "s2" });
    await channel.waitForSent(2);
    expect(systemOf(1)).toContain("Water the greenhouse");
    app.llm!.assertDone();
  });
});

describe("reload: agents, routes and the router's settings", () => {
  it("a new route sends the next message to the other agent; a new system prompt reaches the next request", async () => {
    const agents = { main: { systemPrompt: "You are MAIN." }, other: { systemPrompt: "You are OTHER." } };
    running = await startTestApp({ config: { agents, agent: { systemPrompt: "Global one." } } });
    const app = running;
    const systemOf = (index: number) => String(app.llm!.requests[index]!.messages[0]!.content);
    app.llm!.script(reply.text("first"), reply.text("second"), reply.text("third"));
    await app.channel!.receive("one");
    await app.channel!.waitForSent(1);
    expect(systemOf(0)).toContain("You are MAIN.");
    expect(systemOf(0)).toContain("Global one.");

    const result = await reload(app, {
      agents,
      agent: { systemPrompt: "Global two." },
      routes: [{ match: { chatId: "chat-1" }, agent: "other" }],
    });
    expect(result).toEqual({ applied: ["agent.systemPrompt", "routes"], needsRestart: [], failures: [] });
    await app.channel!.receive("two");
    await app.channel!.waitForSent(2);
    expect(systemOf(1)).toContain("You are OTHER.");
    expect(systemOf(1)).toContain("Global two.");
    expect(systemOf(1)).not.toContain("Global one.");
    expect(app.app.agents.forMessage({ channel: "test", chatId: "chat-1", userId: "user-1" }).name).toBe(
      "other",
    );

    // An agent removed with its route: back to main.
    await reload(app, { agents: { main: agents.main } });
    await app.channel!.receive("three");
    await app.channel!.waitForSent(3);
    expect(systemOf(2)).toContain("You are MAIN.");
    expect(app.app.agents.names()).toEqual(["main"]);
    app.llm!.assertDone();
  });

  it("agent.maxIterations lowered: the next turn stops after that many rounds", async () => {
    running = await startTestApp({ config: { agent: { maxIterations: 5 } } });
    const app = running;
    await reload(app, { agent: { maxIterations: 1 } });
    app.llm!.script(reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]));
    await app.channel!.receive("list files");
    await app.channel!.waitForSent(1);
    // One round only: the tool call's result never goes back for a second request.
    expect(app.llm!.requests).toHaveLength(1);
    app.llm!.assertDone();
  });
});

describe("reload: approvals", () => {
  it("a tool added to security.approvals.require asks for approval at its next call", async () => {
    running = await startTestApp({
      features: [securityFeature],
      config: { security: { approvals: { require: [], timeoutSecs: 5 } } },
    });
    const app = running;
    app.llm!.script(
      reply.toolCalls([{ name: "file_write", arguments: { path: "a.txt", content: "one" } }]),
      reply.text("wrote a"),
    );
    await app.channel!.receive("write a");
    await app.channel!.waitForSent(1);
    expect(app.channel!.texts()).toEqual(["wrote a"]);

    await reload(app, { security: { approvals: { require: ["file_write"], timeoutSecs: 5 } } });
    app.llm!.script(reply.toolCalls([{ name: "file_write", arguments: { path: "b.txt", content: "two" } }]));
    await app.channel!.receive("write b");
    const [, request] = await app.channel!.waitForSent(2);
    expect(request!.message.text).toContain("Approval needed");
    expect(request!.message.text).toContain("file_write");
  });
});

describe("reload: budgets", () => {
  it("a daily cap lowered below today's spending refuses the next call without asking the model", async () => {
    running = await startTestApp({
      features: [usageFeature],
      config: { budgets: { daily: { tokens: 1_000_000 } } },
    });
    const app = running;
    app.llm!.script(reply.text("within budget"));
    await app.channel!.receive("first");
    await app.channel!.waitForSent(1);

    const result = await reload(app, { budgets: { daily: { tokens: 5 } } });
    expect(result.applied).toEqual(["budgets.daily.tokens"]);
    await app.channel!.receive("second");
    await app.channel!.waitForSent(2);
    expect(app.channel!.texts()[1]).toMatch(/budget/i);
    expect(app.llm!.requests).toHaveLength(1);

    // Raised again: answered.
    await reload(app, { budgets: { daily: { tokens: 1_000_000 } } });
    app.llm!.script(reply.text("back within budget"));
    await app.channel!.receive("third");
    await app.channel!.waitForSent(3);
    expect(app.channel!.texts()[2]).toBe("back within budget");
    app.llm!.assertDone();
  });
});

describe("reload: restart-only keys and secrets", () => {
  it("keeps the running value of a restart-only key, reports it, and applies the rest", async () => {
    running = await startTestApp({ config: { agent: { maxIterations: 5 } } });
    const app = running;
    const before = app.app.config;
    const result = await reload(app, {
      http: { port: 18_787 },
      llm: { model: "bigger-model" },
      agent: { maxIterations: 7, maxConcurrentTurns: 9 },
      timezone: "Europe/Paris",
    });
    expect(result.needsRestart).toEqual(["agent.maxConcurrentTurns", "http.port", "llm.model", "timezone"]);
    expect(result.applied).toEqual(["agent.maxIterations"]);
    expect(app.app.config).toBe(before);
    expect(app.app.config.http.port).toBe(0);
    expect(app.app.config.llm.model).toBe("test-model");
    expect(app.app.config.timezone).toBe("UTC");
    expect(app.app.config.agent.maxConcurrentTurns).toBe(4);
    expect(app.app.config.agent.maxIterations).toBe(7);
  });

  it("a secret added by a reload is redacted from then on", async () => {
    running = await startTestApp({});
    const app = running;
    const secret = "brave-NEW-secret-0987654321";
    expect(app.app.redactor.redact(`key ${secret}`)).toContain(secret);
    await reload(app, { tools: { web: { braveApiKey: secret } } });
    expect(app.app.redactor.redact(`key ${secret}`)).toBe("key [REDACTED]");
  });
});
