import { afterEach, describe, expect, it, vi } from "vitest";
import { memoryFeature } from "../../src/app/memory-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { voiceFeature } from "../../src/app/voice-feature.js";
import { type LlmCallEvent, magpieEvents } from "../../src/core/events.js";
import type { Attachment } from "../../src/core/types.js";
import { llmProviders } from "../../src/llm/provider.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

/**
 * Issue 34 → One LLM provider: chat, embeddings, transcription and speech are taken from one provider per configured
 * endpoint. Every `openai` client the process builds is counted here, wherever it is constructed: the SDK's class
 * is replaced by a subclass that records each instance (the real client still does the work).
 */
const built = vi.hoisted(() => ({ baseUrls: [] as string[] }));
vi.mock("openai", async (importOriginal) => {
  const actual = await importOriginal<typeof import("openai")>();
  class CountedOpenAI extends actual.default {
    constructor(...args: ConstructorParameters<typeof actual.default>) {
      super(...args);
      built.baseUrls.push(this.baseURL);
    }
  }
  return { ...actual, default: CountedOpenAI, OpenAI: CountedOpenAI };
});

/** A secret-named variable: the app's redactor knows its value, so no LLM request may carry it. */
const SECRET = "tok-9f8e7d6c5b4a3210";
const AUDIO = Buffer.from("OggS fake voice note bytes");

/** The recording channel plus the one thing a voice note needs: downloading its bytes. */
class VoiceChannel extends RecordingChannel {
  readonly downloads: Attachment[] = [];
  async download(attachment: Attachment): Promise<Buffer> {
    this.downloads.push(attachment);
    return AUDIO;
  }
}

let running: TestApp | null = null;
let backup: OpenAiFake | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
  await backup?.close();
  backup = null;
});

describe("one LLM provider per configured endpoint", () => {
  it("llm + a fallback + memory embeddings + transcription + speech: two endpoints, two clients; embeddings and transcriptions are redacted and published through the ledger", async () => {
    backup = await startOpenAiFake();
    const channel = new VoiceChannel();
    const before = built.baseUrls.length;
    running = await startTestApp({
      channel,
      features: [memoryFeature, usageFeature, voiceFeature],
      env: { BACKUP_API_TOKEN: SECRET },
      config: {
        llm: {
          embeddingModel: "embed-model",
          transcriptionModel: "whisper-test",
          fallbacks: [{ model: "backup-model", baseUrl: backup.url }],
        },
        voice: { replies: "always", engine: "llm" },
      },
    });
    const { app, llm } = running;
    const primary = llm!;
    const events: LlmCallEvent[] = [];
    const unsubscribe = magpieEvents.llmCall.subscribe(app.events.app, (event) => events.push(event));

    // An embeddings request: memory stores the text and embeds it.
    await channel.receive(`/remember the door code is ${SECRET}`);
    await channel.waitForSent(1);
    await waitFor(() => primary.embeddingRequests.length > 0, "the memory's embedding request");

    // A voice note whose file name carries the secret: transcribed, answered by the fallback (the primary fails),
    // and the answer spoken.
    primary.script(reply.error(500, "primary down"));
    backup.script(reply.text("Noted."));
    await channel.receive("", {
      attachments: [
        { kind: "voice", id: "v1", name: `memo-${SECRET}.ogg`, mime: "audio/ogg", size: AUDIO.length },
      ],
    });
    await waitFor(() => primary.speechRequests.length === 1, "the spoken reply");
    await waitFor(() => events.some((event) => event.kind === "speech"), "the speech call's event");
    unsubscribe();

    // One client per endpoint: `llm` (chat, embeddings, transcription, speech) and the fallback (chat).
    const clients = built.baseUrls.slice(before);
    expect(clients.sort()).toEqual([primary.url, backup.url].sort());
    expect(backup.requests.map((request) => request.model)).toEqual(["backup-model"]);
    expect(primary.requests).toHaveLength(1);
    expect(primary.transcriptionRequests).toEqual([{ model: "whisper-test", bytes: AUDIO.length }]);

    // Redaction: the secret reached neither the embeddings nor the transcription endpoint.
    const embedded = primary.embeddingRequests.flatMap((request) => request.input);
    expect(embedded.some((text) => text.includes("the door code is [REDACTED]"))).toBe(true);
    expect(JSON.stringify(primary.embeddingRequests)).not.toContain(SECRET);
    expect(primary.transcriptionFileNames).toEqual(["memo-[REDACTED].ogg"]);
    expect(JSON.stringify([primary.requests, backup.requests, primary.speechRequests])).not.toContain(SECRET);
    // A fallback on `llm`'s own endpoint would share its provider: one client per endpoint, not per model.
    const providers = llmProviders(app.config);
    expect(providers.at({ baseUrl: primary.url, apiKey: "sk-test" })).toBe(providers.primary());
    expect(providers.at({ baseUrl: backup.url, apiKey: "sk-test" })).not.toBe(providers.primary());

    // Every call was published once, by the one place that writes the ledger: each event is a ledger row.
    const published = events.map((event) => ({ kind: event.kind, model: event.model }));
    expect(published).toEqual(app.store.db.prepare("SELECT kind, model FROM llm_usage ORDER BY id").all());
    expect(new Set(published.map((event) => event.kind))).toEqual(
      new Set(["embedding", "transcription", "chat", "speech"]),
    );
    expect(events.find((event) => event.kind === "chat")).toMatchObject({
      model: "backup-model",
      fallback: true,
    });
    expect(events.filter((event) => event.kind === "transcription")).toHaveLength(1);
    primary.assertDone();
    backup.assertDone();
  });
});
