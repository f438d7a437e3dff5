import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { retryDelayMs } from "../../src/llm/backoff.js";
import { type ChatModelDeps, createChatModel } from "../../src/llm/create-model.js";
import { describeLlmError } from "../../src/llm/errors.js";
import type { ChatModel, CompletionRequest } from "../../src/llm/types.js";
import { createRedactor } from "../../src/log/redact.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { testConfig } from "../helpers/harness.js";

let primary: OpenAiFake;
let fallback: OpenAiFake;
let clock: number;
let waits: number[];

beforeEach(async () => {
  [primary, fallback] = await Promise.all([startOpenAiFake(), startOpenAiFake()]);
  clock = 1_000_000;
  waits = [];
});
afterEach(async () => {
  await Promise.all([primary.close(), fallback.close()]);
});

const request: CompletionRequest = { model: "test-model", messages: [{ role: "user", content: "hi" }] };

/** The chain as the app builds it, over the two fakes; back-off waits are recorded and kept short. */
function chain(llm: Record<string, unknown> = {}, deps: ChatModelDeps = {}): ChatModel {
  const config = testConfig({
    llm: {
      baseUrl: primary.url,
      apiKey: "sk-test",
      fallbacks: [{ model: "fb-model", baseUrl: fallback.url }],
      ...llm,
    },
  } as ConfigInput);
  const model = createChatModel(config, {
    now: () => clock,
    sleep: async (ms) => {
      waits.push(ms);
      await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 50)));
    },
    ...deps,
  });
  if (!model) throw new Error("no model");
  return model;
}

function userMessage(error: unknown): string {
  return describeLlmError(error, { model: "test-model", timeoutMs: 5_000, baseUrl: primary.url }).userMessage;
}

describe("model chain", () => {
  it("answers from the primary with answeredBy set, fallback false", async () => {
    primary.script(reply.text("primary answer"));
    const result = await chain().complete(request);
    expect(result.content).toBe("primary answer");
    expect(result.answeredBy).toEqual({ model: "test-model", fallback: false });
    expect(result.usage).toEqual({ promptTokens: 10, completionTokens: 10 });
    primary.assertDone();
  });

  it("fails over to the fallback after a 503, with the fallback's model", async () => {
    primary.script(reply.error(503, "overloaded"));
    fallback.script(reply.text("fallback answer", (body) => expect(body.model).toBe("fb-model")));
    const result = await chain().complete(request);
    expect(result.content).toBe("fallback answer");
    expect(result.answeredBy).toEqual({ model: "fb-model", fallback: true });
    primary.assertDone();
    fallback.assertDone();
  });

  it("retries a retryable error llm.maxRetries times before failing over", async () => {
    primary.script(reply.error(500), reply.error(429), reply.error(502));
    fallback.script(reply.text("fallback answer"));
    const result = await chain({ maxRetries: 2 }).complete(request);
    expect(primary.requests).toHaveLength(3);
    expect(result.answeredBy?.fallback).toBe(true);
    // Default back-off: 0.5 s then 1 s, less up to 25 % jitter.
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(375);
    expect(waits[0]).toBeLessThanOrEqual(500);
    expect(waits[1]).toBeGreaterThanOrEqual(750);
    expect(waits[1]).toBeLessThanOrEqual(1000);
  });

  it("honours retry-after and retry-after-ms, and answers from the primary when a retry succeeds", async () => {
    primary.script(
      reply.error(429, "slow down", { "retry-after": "0.03" }),
      reply.error(503, "busy", { "retry-after-ms": "20" }),
      reply.text("third time"),
    );
    const started = Date.now();
    const result = await chain({ maxRetries: 2 }, { now: () => clock }).complete(request);
    expect(result.content).toBe("third time");
    expect(result.answeredBy).toEqual({ model: "test-model", fallback: false });
    expect(waits).toEqual([30, 20]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it("waits for real with the default sleep (retry-after of 50 ms)", async () => {
    primary.script(reply.error(503, "busy", { "retry-after-ms": "50" }), reply.text("ok"));
    const config = testConfig({ llm: { baseUrl: primary.url, apiKey: "sk-test", maxRetries: 1 } });
    const started = Date.now();
    const result = await createChatModel(config)!.complete(request);
    expect(result.content).toBe("ok");
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it("does not wait for a retry-after beyond a minute: it goes to the next model", async () => {
    primary.script(reply.error(429, "quota", { "retry-after": "3600" }));
    fallback.script(reply.text("fallback answer"));
    const result = await chain({ maxRetries: 2 }).complete(request);
    expect(result.answeredBy?.model).toBe("fb-model");
    expect(waits).toEqual([]);
    expect(retryDelayMs(0, 61_000)).toBeNull();
  });

  it("cools a 401 entry down for llm.cooldownSecs, then tries it again", async () => {
    const model = chain({ cooldownSecs: 300 });
    primary.script(reply.error(401, "invalid api key"));
    fallback.script(reply.text("one"), reply.text("two"), reply.text("three"));
    expect((await model.complete(request)).content).toBe("one");
    expect(primary.requests).toHaveLength(1);

    clock += 299_000;
    const second = await model.complete(request);
    expect(second.content).toBe("two");
    expect(second.answeredBy).toEqual({ model: "fb-model", fallback: true });
    expect(primary.requests).toHaveLength(1);

    clock += 2_000;
    primary.script(reply.text("primary is back"));
    const third = await model.complete(request);
    expect(third.content).toBe("primary is back");
    expect(third.answeredBy?.fallback).toBe(false);
    expect(primary.requests).toHaveLength(2);
    expect(fallback.pending()).toBe(1);
  });

  it("a 403 also cools down and is not retried", async () => {
    primary.script(reply.error(403, "forbidden"));
    fallback.script(reply.text("fallback answer"));
    await chain({ maxRetries: 3 }).complete(request);
    expect(primary.requests).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it("a 400 does not fail over; the error names the model and the status", async () => {
    primary.script(reply.error(400, "context length exceeded"));
    const error = await chain({ maxRetries: 2 })
      .complete(request)
      .catch((caught: unknown) => caught);
    expect(primary.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
    const failure = describeLlmError(error, { model: "test-model", timeoutMs: 5_000 });
    expect(failure.code).toBe("llm.bad_request");
    expect(failure.status).toBe(400);
    expect(failure.userMessage).toMatch(/"test-model" \(400\): context length exceeded/);
  });

  it("a 404 on a fallback names that fallback's config key and what failed before it", async () => {
    primary.script(reply.error(503));
    fallback.script(reply.error(404, "no such model"));
    const error = await chain()
      .complete(request)
      .catch((caught: unknown) => caught);
    const message = userMessage(error);
    expect(message).toMatch(
      /The model "fb-model" was not found at .* \(404\)\. Check llm\.fallbacks\[0\]\.model\./,
    );
    expect(message).toMatch(/Tried before it: test-model: HTTP 503/);
  });

  it("every model failing is one error listing each with its reason", async () => {
    primary.script(reply.error(503, "overloaded"));
    await fallback.close();
    const error = await chain()
      .complete(request)
      .catch((caught: unknown) => caught);
    const failure = describeLlmError(error, { model: "test-model", timeoutMs: 5_000 });
    // A 503 and a refused connection pass: an outage a chat turn waits out (DESIGN.md → Waiting out an outage).
    expect(failure.code).toBe("llm.all_unavailable");
    expect(failure.userMessage).toBe(
      `All configured models failed, so I can't answer right now:\n• test-model: HTTP 503\n• fb-model: unreachable at ${fallback.url}`,
    );
  });

  it("lists a cooled-down entry as skipped, with the key to check", async () => {
    const model = chain();
    primary.script(reply.error(401));
    fallback.script(reply.text("one"), reply.error(500));
    await model.complete(request);
    const error = await model.complete(request).catch((caught: unknown) => caught);
    expect(primary.requests).toHaveLength(1);
    // A rejected key among them is no outage: a person must fix it.
    expect(describeLlmError(error, { model: "test-model", timeoutMs: 5_000 }).code).toBe("llm.all_failed");
    expect(userMessage(error)).toMatch(
      /• test-model: skipped, its API key was rejected a moment ago \(tried again in 5 min; check OPENAI_API_KEY or llm\.apiKey\)\n• fb-model: HTTP 500/,
    );
  });

  it("with no fallbacks, a failure keeps its plain message (and a 401 is never cooled down)", async () => {
    const single = chain({ fallbacks: [] });
    primary.script(reply.error(401), reply.error(401));
    const first = await single.complete(request).catch((caught: unknown) => caught);
    expect(userMessage(first)).toBe(
      "The language model provider rejected the API key (401). Check OPENAI_API_KEY or llm.apiKey.",
    );
    await single.complete(request).catch(() => undefined);
    expect(primary.requests).toHaveLength(2);
  });

  it("a fallback identical to the requested model is not tried twice", async () => {
    const model = chain({ fallbacks: [{ model: "test-model" }] });
    primary.script(reply.error(500));
    const error = await model.complete(request).catch((caught: unknown) => caught);
    expect(primary.requests).toHaveLength(1);
    expect(userMessage(error)).toMatch(/internal error \(HTTP 500\)/);
  });

  it("a fallback's apiKey defaults to llm.apiKey, its own otherwise", async () => {
    primary.script(reply.error(500), reply.error(500));
    fallback.script(reply.text("a"), reply.text("b"));
    await chain().complete(request);
    await chain({
      fallbacks: [{ model: "fb-model", baseUrl: fallback.url, apiKey: "sk-fallback" }],
    }).complete(request);
    const keys = fallback.requestHeaders.map((headers) => headers.authorization);
    expect(keys).toEqual(["Bearer sk-test", "Bearer sk-fallback"]);
  });
});

describe("model chain, streaming", () => {
  it("asks for usage and fills it from the final chunk", async () => {
    primary.script(
      reply.text("streamed answer", (body) => expect(body.stream_options).toEqual({ include_usage: true })),
    );
    const deltas: string[] = [];
    const result = await chain().complete(request, { onTextDelta: (delta) => deltas.push(delta) });
    expect(deltas.join("")).toBe("streamed answer");
    expect(result.usage).toEqual({ promptTokens: 10, completionTokens: 10 });
    expect(result.answeredBy).toEqual({ model: "test-model", fallback: false });
    primary.assertDone();
  });

  it("leaves usage undefined when the server sends none", async () => {
    primary.streamUsage = false;
    primary.script(reply.text("no usage here"));
    const result = await chain().complete(request, { onTextDelta: () => {} });
    expect(result.content).toBe("no usage here");
    expect(result.usage).toBeUndefined();
  });

  it("fails over when the stream breaks before the first text delta", async () => {
    primary.script(reply.brokenStream());
    fallback.script(reply.text("from the fallback"));
    const deltas: string[] = [];
    const result = await chain().complete(request, { onTextDelta: (delta) => deltas.push(delta) });
    expect(deltas.join("")).toBe("from the fallback");
    expect(result.answeredBy).toEqual({ model: "fb-model", fallback: true });
  });

  it("fails over when the stream answers 503 before any text", async () => {
    primary.script(reply.error(503));
    fallback.script(reply.text("from the fallback"));
    const deltas: string[] = [];
    const result = await chain().complete(request, { onTextDelta: (delta) => deltas.push(delta) });
    expect(deltas.join("")).toBe("from the fallback");
    expect(result.answeredBy?.fallback).toBe(true);
  });

  it("does not retry or fail over once text was streamed: no duplicate text", async () => {
    primary.script(reply.brokenStream("Half an ans"));
    const deltas: string[] = [];
    const error = await chain({ maxRetries: 2 })
      .complete(request, { onTextDelta: (delta) => deltas.push(delta) })
      .catch((caught: unknown) => caught);
    expect(deltas.join("")).toBe("Half an ans");
    expect(primary.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
    const failure = describeLlmError(error, { model: "test-model", timeoutMs: 5_000 });
    expect(failure.code).toBe("llm.stream_broken");
    expect(failure.userMessage).toBe(
      "The answer from test-model broke off (the connection dropped). Please ask again.",
    );
  });

  it("an abort during back-off ends the call at once", async () => {
    primary.script(reply.error(503, "busy", { "retry-after": "30" }));
    const config = testConfig({ llm: { baseUrl: primary.url, apiKey: "sk-test", maxRetries: 2 } });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error("stopped")), 50);
    const error = await createChatModel(config)!
      .complete(request, { signal: controller.signal })
      .catch((caught: unknown) => caught);
    expect((error as Error).message).toBe("stopped");
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("fallback keys are secrets", () => {
  it("the redactor knows every fallback's apiKey", () => {
    const config = testConfig({
      llm: {
        apiKey: "sk-primary-123456",
        fallbacks: [
          { model: "a", apiKey: "sk-fallback-aaaaaa" },
          { model: "b" },
          { model: "c", apiKey: "sk-fallback-cccccc" },
        ],
      },
    });
    const redactor = createRedactor(config, {});
    const text = redactor.redact("keys: sk-primary-123456 sk-fallback-aaaaaa sk-fallback-cccccc");
    expect(text).not.toContain("sk-primary-123456");
    expect(text).not.toContain("sk-fallback-aaaaaa");
    expect(text).not.toContain("sk-fallback-cccccc");
  });
});

describe("warm-up", () => {
  it("warm() builds the client without a request; through the redacting wrapper too; the first call then works", async () => {
    const redactor = createRedactor(testConfig({ llm: { apiKey: "sk-test" } } as ConfigInput));
    const { redactingModel } = await import("../../src/llm/redacting-model.js");
    const model = redactingModel(chain(), redactor);
    expect(model.warm).toBeTypeOf("function");
    await model.warm!();
    expect(primary.requests).toHaveLength(0);
    expect(fallback.requests).toHaveLength(0);
    primary.script(reply.text("warm"));
    const result = await model.complete(request);
    expect(result.content).toBe("warm");
    expect(primary.requests).toHaveLength(1);
  });
});
