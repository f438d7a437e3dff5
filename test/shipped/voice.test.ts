import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram, type TelegramCall } from "../fakes/telegram.js";
import { hasPrograms } from "../helpers/requires.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * Voice replies through the shipped build (`node dist/bundle/main.js start`): a voice note on Telegram is
 * answered with the text and an OGG/Opus voice note (sendVoice) — spoken by /audio/speech (engine llm) and by
 * espeak-ng with opusenc on the box (engine espeak).
 */

const OWNER = { id: 601, first_name: "Alice" };

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function start(voice: Record<string, unknown>): Promise<{ telegram: FakeTelegram; llm: OpenAiFake }> {
  const [telegram, llm] = await Promise.all([new FakeTelegram().start(), startOpenAiFake()]);
  cleanup.push(
    () => telegram.close(),
    () => llm.close(),
  );
  const bot = await ShippedBot.start({
    config: {
      llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", transcriptionModel: "whisper-test" },
      agent: { streaming: false },
      channels: {
        telegram: {
          token: telegram.validToken,
          apiRoot: telegram.apiRoot,
          pacing: false,
          allowFrom: [OWNER.id],
        },
      },
      voice,
    },
  });
  cleanup.push(() => bot.dispose());
  return { telegram, llm };
}

function pushVoiceNote(telegram: FakeTelegram) {
  const audio = Buffer.from("OggS fake opus bytes");
  telegram.files.set("VOICE1", { path: "voice/v1.oga", content: audio });
  telegram.pushMessage({
    chat: { id: OWNER.id, type: "private" },
    from: OWNER,
    extra: {
      voice: { file_id: "VOICE1", file_unique_id: "v1", duration: 2, mime_type: "audio/ogg", file_size: 20 },
    },
  });
}

const voiceCalls = (telegram: FakeTelegram): TelegramCall[] =>
  telegram.callsOf("sendVoice").filter((call) => !call.failed);

function expectOggOpus(bytes: Buffer) {
  expect(bytes.subarray(0, 4).toString("latin1")).toBe("OggS");
  const head = bytes.indexOf("OpusHead", 0, "latin1");
  expect(head).toBeGreaterThan(0);
  expect(head).toBeLessThan(64);
}

describe("shipped build: voice replies", () => {
  it("engine llm: a Telegram voice note gets the text and an OGG/Opus voice note spoken by /audio/speech", async () => {
    const { telegram, llm } = await start({ replies: "mirror", engine: "llm", speechModel: "tts-test" });
    llm.transcript = "how is the weather";
    llm.script(reply.text("Sunny all day."));
    pushVoiceNote(telegram);
    const [voice] = await waitFor(
      () => voiceCalls(telegram).length > 0 && voiceCalls(telegram),
      "the voice answer",
      20_000,
    );
    expect(telegram.sentTexts()).toContain("Sunny all day.");
    expect(llm.speechRequests).toEqual([
      { model: "tts-test", voice: "alloy", input: "Sunny all day.", response_format: "opus" },
    ]);
    expectOggOpus(voice!.uploads!.voice!.content);
    llm.assertDone();
  }, 60_000);

  it.runIf(hasPrograms("espeak-ng", "opusenc"))(
    "engine espeak: the voice note is spoken on the box (espeak-ng, opusenc), no /audio/speech request",
    async () => {
      const { telegram, llm } = await start({ replies: "always", engine: "espeak" });
      llm.script(reply.text("Spoken locally."));
      telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "say something" });
      const [voice] = await waitFor(
        () => voiceCalls(telegram).length > 0 && voiceCalls(telegram),
        "the voice answer",
        20_000,
      );
      expectOggOpus(voice!.uploads!.voice!.content);
      expect(llm.speechRequests).toEqual([]);
      llm.assertDone();
    },
    60_000,
  );
});
