import { afterEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import { isOggOpus } from "../../src/voice/speech.js";
import { spokenText } from "../../src/voice/voice-replies.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import type { TelegramCall } from "../fakes/telegram.js";
import { hasPrograms } from "../helpers/requires.js";
import { startTelegramApp, type TelegramApp } from "../helpers/telegram-app.js";

/** Voice replies end to end: the real grammY client, the Telegram fake, the LLM fake's /audio/speech, espeak-ng. */

const OWNER = { id: 777, first_name: "Alice" };
const DM = { id: OWNER.id, type: "private" as const };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function setup(config: Record<string, unknown>) {
  const app = await startTelegramApp({
    access: { allowFrom: [OWNER.id] },
    config: { llm: { transcriptionModel: "whisper-test" }, ...config } as ConfigInput,
  });
  cleanup.push(() => app.stop());
  return { app, telegram: app.telegram, llm: app.testApp.llm! };
}

function pushVoiceNote(app: TelegramApp, fileId: string) {
  const audio = Buffer.from("OggS fake opus bytes");
  app.telegram.files.set(fileId, { path: `voice/${fileId}.oga`, content: audio });
  app.telegram.pushMessage({
    chat: DM,
    from: OWNER,
    extra: {
      voice: { file_id: fileId, file_unique_id: fileId, duration: 2, mime_type: "audio/ogg", file_size: 20 },
    },
  });
}

const voiceCalls = (app: TelegramApp): TelegramCall[] =>
  app.telegram.callsOf("sendVoice").filter((call) => !call.failed);

/** The ledger's speech rows. */
function speechRows(app: TelegramApp): Array<{ kind: string; model: string; prompt_tokens: number }> {
  return app.testApp.app.store.db
    .prepare("SELECT kind, model, prompt_tokens FROM llm_usage WHERE kind = 'speech' ORDER BY id")
    .all() as Array<{ kind: string; model: string; prompt_tokens: number }>;
}

/** An OGG stream whose first page carries the Opus identification header (RFC 7845): version 1, channels ≥ 1. */
function expectOggOpus(bytes: Buffer) {
  expect(bytes.subarray(0, 4).toString("latin1")).toBe("OggS");
  const head = bytes.indexOf("OpusHead", 0, "latin1");
  expect(head).toBeGreaterThan(0);
  expect(head).toBeLessThan(64);
  expect(bytes[head + 8]).toBe(1);
  expect(bytes[head + 9]).toBeGreaterThanOrEqual(1);
  expect(isOggOpus(bytes)).toBe(true);
}

describe("voice replies", () => {
  it("mirror, engine llm: a voice note on Telegram gets the text and a voice note (sendVoice, OGG/Opus), spoken by /audio/speech and in the ledger", async () => {
    const { app, telegram, llm } = await setup({
      voice: { replies: "mirror", engine: "llm", speechModel: "tts-test", voice: "nova" },
    });
    llm.transcript = "what time is it";
    llm.script(reply.text("It is **noon** — see [the clock](https://example.com/clock)."));
    pushVoiceNote(app, "VOICE1");
    const [voice] = await waitFor(() => voiceCalls(app).length > 0 && voiceCalls(app), "the voice answer");
    expect(telegram.sentTexts()).toContain(
      'It is <b>noon</b> — see <a href="https://example.com/clock">the clock</a>.',
    );
    expect(llm.speechRequests).toEqual([
      { model: "tts-test", voice: "nova", input: "It is noon — see the clock.", response_format: "opus" },
    ]);
    expect(String(voice!.body.chat_id)).toBe(String(OWNER.id));
    expectOggOpus(voice!.uploads!.voice!.content);
    expect(speechRows(app)).toEqual([
      { kind: "speech", model: "tts-test", prompt_tokens: expect.any(Number) },
    ]);
    llm.assertDone();
  });

  it("mirror answers a typed message with text only; /voice on (owner) speaks every reply in that chat", async () => {
    const { app, telegram, llm } = await setup({ voice: { replies: "mirror" } });
    llm.script(reply.text("Typed answer."), reply.text("Spoken answer."));
    telegram.pushMessage({ chat: DM, from: OWNER, text: "hello" });
    await waitFor(() => telegram.sentTexts().includes("Typed answer."), "the first answer");
    telegram.pushMessage({ chat: DM, from: OWNER, text: "/voice on" });
    await waitFor(() => telegram.sentTexts().some((text) => /Voice replies are on/.test(text)), "/voice on");
    telegram.pushMessage({ chat: DM, from: OWNER, text: "and now?" });
    await waitFor(() => voiceCalls(app).length > 0, "a voice note for the typed message");
    expect(llm.speechRequests.map((request) => request.input)).toEqual(["Spoken answer."]);
    llm.assertDone();
  });

  it("a guest's /voice is refused and changes nothing", async () => {
    const GROUP = { id: -1001, type: "supergroup" as const, title: "Ops" };
    const GUEST = { id: 999, first_name: "Mallory" };
    const app = await startTelegramApp({
      access: { allowFrom: [OWNER.id], groups: [GROUP.id], requireMention: false },
      config: { voice: { replies: "off" } } as ConfigInput,
    });
    cleanup.push(() => app.stop());
    const llm = app.testApp.llm!;
    llm.script(reply.text("Plain answer."));
    app.telegram.pushMessage({ chat: GROUP, from: GUEST, text: "/voice on" });
    await waitFor(() => app.telegram.sentTexts().some((text) => /owner/i.test(text)), "the refusal");
    app.telegram.pushMessage({ chat: GROUP, from: OWNER, text: "question" });
    await waitFor(() => app.telegram.sentTexts().includes("Plain answer."), "the answer");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(llm.speechRequests).toEqual([]);
    expect(voiceCalls(app)).toEqual([]);
  });

  it("a reached budget stops the speech request before it is made; the text still arrives", async () => {
    // The chat call spends 20 tokens: the perChat cap of 20 is then reached, so /audio/speech must not be asked.
    const { app, telegram, llm } = await setup({
      voice: { replies: "always" },
      budgets: { perChat: { tokens: 20 } },
    });
    llm.script(reply.text("Answer within budget."));
    telegram.pushMessage({ chat: DM, from: OWNER, text: "hi" });
    await waitFor(() => telegram.sentTexts().includes("Answer within budget."), "the text answer");
    // The hook runs after the reply is queued: give it the time a speech request would take.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(llm.speechRequests).toEqual([]);
    expect(speechRows(app)).toEqual([]);
    expect(voiceCalls(app)).toEqual([]);
  });

  it("a failed /audio/speech costs the chat only the audio", async () => {
    const { app, telegram, llm } = await setup({ voice: { replies: "always" } });
    llm.speechStatus = 500;
    llm.script(reply.text("Still here."), reply.text("Second."));
    telegram.pushMessage({ chat: DM, from: OWNER, text: "hi" });
    await waitFor(() => telegram.sentTexts().includes("Still here."), "the text answer");
    await waitFor(() => llm.speechRequests.length > 0, "the speech attempt");
    telegram.pushMessage({ chat: DM, from: OWNER, text: "again" });
    await waitFor(() => telegram.sentTexts().includes("Second."), "the next answer");
    expect(voiceCalls(app)).toEqual([]);
  });

  describe.runIf(hasPrograms("espeak-ng", "opusenc"))("engine espeak", () => {
    it("speaks on the box with espeak-ng and opusenc: a real OGG/Opus voice note, no network request, no ledger row", async () => {
      const { app, llm } = await setup({ voice: { replies: "mirror", engine: "espeak" } });
      llm.transcript = "say something";
      llm.script(reply.text("Hello from the box."));
      pushVoiceNote(app, "VOICE2");
      const [voice] = await waitFor(
        () => voiceCalls(app).length > 0 && voiceCalls(app),
        "the voice answer",
        20_000,
      );
      const bytes = voice!.uploads!.voice!.content;
      expectOggOpus(bytes);
      expect(bytes.length).toBeGreaterThan(1000);
      expect(llm.speechRequests).toEqual([]);
      expect(speechRows(app)).toEqual([]);
    });
  });
});

describe("spokenText", () => {
  it("drops code blocks, Markdown marks and URLs; keeps link labels", () => {
    expect(
      spokenText("**Done.** Run:\n```sh\nrm -rf x\n```\nSee [docs](https://x.test) or https://y.test"),
    ).toBe("Done. Run:\n \nSee docs or");
  });

  it("cuts a long reply at a word under 4,000 characters, in linear time", () => {
    const long = "word ".repeat(200_000);
    const started = Date.now();
    const spoken = spokenText(long);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(spoken.length).toBeLessThanOrEqual(4001);
    expect(spoken.endsWith("word…")).toBe(true);
  });
});
