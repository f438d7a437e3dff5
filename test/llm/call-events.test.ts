import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { usageFeature } from "../../src/app/usage-feature.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { type LlmCallEvent, magpieEvents } from "../../src/core/events.js";
import { createChatModel } from "../../src/llm/create-model.js";
import type { CallScope, LlmCallFields, LlmCallPorts, LlmUsage } from "../../src/llm/llm-call.js";
import { LlmProviders } from "../../src/llm/provider.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { startTestApp, type TestApp, testConfig } from "../helpers/harness.js";

/**
 * Issue 34 → "one place publishes the LLM-call event": the provider (src/llm/provider.ts) writes every call's ledger
 * row and publishes its one `llmCall` event — chat, embeddings, transcription and speech, answered and failed.
 * Each call is counted here: a second publisher (the agent loop or the ledger publishing too) makes a call two
 * events, and a path that publishes nothing makes it zero.
 */

const SCOPE: CallScope = {
  origin: "user",
  sessionKey: "telegram:1",
  historyKey: "telegram:1",
  turnId: "turn-1",
  agent: "main",
};
/** An endpoint nothing listens on: every call to it fails at once (connection refused). */
const NOWHERE = { baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" };
const noRedaction = { redact: (text: string) => text };

let fake: OpenAiFake | null = null;
let running: TestApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
  await fake?.close();
  fake = null;
});

/** Providers over `config` whose ledger and publisher record what they are handed. */
function accounted(config: MagpieConfig) {
  const events: LlmCallFields[] = [];
  const rows: Array<{ scope: CallScope; usage: LlmUsage }> = [];
  const ports: LlmCallPorts = {
    events: { llmCall: (event) => events.push(event) },
    ledger: {
      record: (scope, usage) => {
        rows.push({ scope, usage });
        return 0.25;
      },
    },
  };
  const providers = new LlmProviders(config, noRedaction, ports);
  /** Runs one call and returns the events it published and the ledger rows it wrote. */
  const one = async (call: () => Promise<unknown>) => {
    const [eventsBefore, rowsBefore] = [events.length, rows.length];
    await call().catch(() => undefined);
    return { events: events.slice(eventsBefore), rows: rows.slice(rowsBefore) };
  };
  return { providers, one };
}

describe("the LLM provider publishes each call exactly once", () => {
  it("answered and failed calls of every kind: one event each, a ledger row for each answered one", async () => {
    fake = await startOpenAiFake();
    const config = testConfig({ llm: { baseUrl: fake.url, apiKey: "sk-test" } });
    const { providers, one } = accounted(config);
    const chat = providers.chat(createChatModel(config, { providers })!);
    const primary = providers.primary();
    const nowhere = providers.at(NOWHERE);
    const request = { model: "test-model", messages: [{ role: "user" as const, content: "hi" }] };

    fake.script(reply.text("hello"), reply.error(400, "bad request"));
    const calls = {
      "chat answered": await one(() => chat.complete(request, { scope: SCOPE })),
      "chat failed": await one(() => chat.complete(request, { scope: SCOPE })),
      "embedding answered": await one(() => primary.embeddings("embed-model", ["a", "b"], { scope: SCOPE })),
      "transcription answered": await one(() =>
        primary.transcription("whisper-test", Buffer.from("OggS"), "a.ogg", "audio/ogg", SCOPE),
      ),
      "transcription failed": await one(() =>
        nowhere.transcription("whisper-test", Buffer.from("OggS"), "a.ogg", "audio/ogg", SCOPE),
      ),
      "speech answered": await one(() => primary.speech("tts-1", "alloy", "Hello there", "opus", SCOPE)),
    };
    fake.embeddingStatus = 500;
    fake.speechStatus = 500;
    Object.assign(calls, {
      "embedding failed": await one(() => primary.embeddings("embed-model", ["a"], { scope: SCOPE })),
      "speech failed": await one(() => primary.speech("tts-1", "alloy", "Hello there", "opus", SCOPE)),
    });

    const summary = Object.fromEntries(
      Object.entries(calls).map(([name, call]) => [
        name,
        call.events.map((event) => `${event.kind} ${event.result}`).join(", "),
      ]),
    );
    expect(summary).toEqual({
      "chat answered": "chat ok",
      "chat failed": "chat error",
      "embedding answered": "embedding ok",
      "transcription answered": "transcription ok",
      "transcription failed": "transcription error",
      "speech answered": "speech ok",
      "embedding failed": "embedding error",
      "speech failed": "speech error",
    });
    // Every event carries the scope and, for answered calls, the ledger's price.
    for (const call of Object.values(calls)) {
      expect(call.events[0]).toMatchObject({ turnId: "turn-1", origin: "user", sessionKey: "telegram:1" });
    }
    expect(calls["chat answered"].events[0]).toMatchObject({ model: "test-model", costUsd: 0.25 });
    expect(calls["chat failed"].events[0]!.errorCode).toMatch(/^llm\./);
    expect(calls["transcription failed"].events[0]!.errorCode).toBe("llm.unreachable");
    // The ledger: one row per answered call; none for a failed one — but speech is billed by its input.
    const rowKinds = Object.fromEntries(
      Object.entries(calls).map(([name, call]) => [name, call.rows.map((row) => row.usage.kind)]),
    );
    expect(rowKinds).toEqual({
      "chat answered": ["chat"],
      "chat failed": [],
      "embedding answered": ["embedding"],
      "transcription answered": ["transcription"],
      "transcription failed": [],
      "speech answered": ["speech"],
      "embedding failed": [],
      "speech failed": ["speech"],
    });
    fake.assertDone();
  });

  it("a call the caller stopped publishes nothing; a call for no one is published, never filed", async () => {
    fake = await startOpenAiFake();
    const config = testConfig({ llm: { baseUrl: fake.url, apiKey: "sk-test" } });
    const { providers, one } = accounted(config);
    const stopped = new AbortController();
    stopped.abort();
    const aborted = await one(() =>
      providers.primary().embeddings("embed-model", ["a"], { signal: stopped.signal, scope: SCOPE }),
    );
    expect(aborted).toEqual({ events: [], rows: [] });
    const unscoped = await one(() => providers.primary().embeddings("embed-model", ["a"]));
    expect(unscoped.rows).toEqual([]);
    expect(unscoped.events).toMatchObject([{ kind: "embedding", result: "ok", origin: "unknown" }]);
  });

  it("in a running app a failed and an answered chat turn publish one event each, matching the ledger", async () => {
    running = await startTestApp({ features: [usageFeature] });
    const { app, channel, llm } = running;
    const events: LlmCallEvent[] = [];
    const unsubscribe = magpieEvents.llmCall.subscribe(app.events.app, (event) => events.push(event));
    llm!.script(reply.error(400, "refused"));
    await channel!.receive("first");
    await channel!.waitForSent(1);
    llm!.script(reply.text("answered"));
    await channel!.receive("second");
    await channel!.waitForSent(2);
    unsubscribe();
    expect(events.map((event) => `${event.kind} ${event.result}`)).toEqual(["chat error", "chat ok"]);
    const ledger = app.store.db.prepare("SELECT kind, turn_id AS turnId FROM llm_usage ORDER BY id").all();
    expect(ledger).toEqual([{ kind: "chat", turnId: events[1]!.turnId }]);
    llm!.assertDone();
  });

  it("no code but the provider publishes the event (src/ and channels/)", () => {
    const root = path.resolve(import.meta.dirname, "../..");
    const publishers = ["src", "channels"].flatMap((dir) =>
      readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .map((file) => path.join(dir, file))
        .filter((file) => /\.llmCall\(/.test(readFileSync(path.join(root, file), "utf8"))),
    );
    expect(publishers).toEqual([path.join("src", "llm", "provider.ts")]);
  });
});
