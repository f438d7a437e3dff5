import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import type { ChatRequestBody } from "../fakes/openai.js";
import { reply } from "../fakes/openai.js";
import { startTelegramApp } from "../helpers/telegram-app.js";

/** Media in end to end: a photo and a voice note through the real grammY client, the Telegram fake and the LLM fake. */

const OWNER = { id: 777, first_name: "Alice" };
/** A real 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

async function setup(llmConfig: Record<string, unknown> = {}) {
  const app = await startTelegramApp({ access: { allowFrom: [OWNER.id] }, config: { llm: llmConfig } });
  cleanup.push(() => app.stop());
  return { telegram: app.telegram, llm: app.testApp.llm! };
}

const userMessage = (body: ChatRequestBody) => body.messages.findLast((message) => message.role === "user");

describe("media in", () => {
  it("a photo reaches the model as an image part with the caption; history keeps the text only", async () => {
    const { telegram, llm } = await setup();
    telegram.files.set("PHOTO1", { path: "photos/p1.png", content: PNG });
    llm.script(
      reply.text("A tiny picture.", (body) => {
        const content = userMessage(body)?.content as unknown as Array<Record<string, unknown>>;
        expect(Array.isArray(content)).toBe(true);
        expect(content[0]).toMatchObject({ type: "text" });
        expect(String((content[0] as { text: string }).text)).toContain("what is this?");
        expect(content[1]).toEqual({
          type: "image_url",
          image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` },
        });
      }),
      reply.text("Still tiny.", (body) => {
        // The next turn's history holds the first message as text, not the image again.
        expect(JSON.stringify(body)).not.toContain(PNG.toString("base64"));
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER.id, type: "private" },
      from: OWNER,
      extra: {
        caption: "what is this?",
        photo: [{ file_id: "PHOTO1", file_unique_id: "p", width: 1, height: 1, file_size: PNG.length }],
      },
    });
    await waitFor(() => telegram.sentTexts().includes("A tiny picture."), "the answer");
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "and now?" });
    await waitFor(() => telegram.sentTexts().includes("Still tiny."), "the second answer");
    llm.assertDone();
  });

  it("llm.vision auto: a model that refuses images gets the text alone, and the user still gets an answer", async () => {
    const { telegram, llm } = await setup();
    telegram.files.set("PHOTO2", { path: "photos/p2.png", content: PNG });
    llm.script(
      reply.error(400, "this model does not support image inputs"),
      reply.text("I can't see images, but I got your message.", (body) => {
        expect(typeof userMessage(body)?.content).toBe("string");
        expect(String(userMessage(body)?.content)).toContain("could not take the image");
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER.id, type: "private" },
      from: OWNER,
      extra: {
        photo: [{ file_id: "PHOTO2", file_unique_id: "p2", width: 1, height: 1, file_size: PNG.length }],
      },
    });
    await waitFor(
      () => telegram.sentTexts().some((text) => text.startsWith("I can't see images")),
      "the answer",
    );
    llm.assertDone();
  });

  it("a voice note is transcribed through /audio/transcriptions and the transcript reaches the model", async () => {
    const { telegram, llm } = await setup({ transcriptionModel: "whisper-test" });
    const audio = Buffer.from("OggS fake opus bytes");
    telegram.files.set("VOICE1", { path: "voice/v1.oga", content: audio });
    llm.transcript = "remind me to water the plants";
    llm.script(
      reply.text("Will do.", (body) => {
        expect(String(userMessage(body)?.content)).toContain(
          "[voice note transcript]: remind me to water the plants",
        );
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER.id, type: "private" },
      from: OWNER,
      extra: {
        voice: {
          file_id: "VOICE1",
          file_unique_id: "v",
          duration: 2,
          mime_type: "audio/ogg",
          file_size: audio.length,
        },
      },
    });
    await waitFor(() => telegram.sentTexts().includes("Will do."), "the answer");
    expect(llm.transcriptionRequests).toEqual([{ model: "whisper-test", bytes: audio.length }]);
    llm.assertDone();
  });

  it("llm.vision false: the photo is described, not sent", async () => {
    const { telegram, llm } = await setup({ vision: false });
    telegram.files.set("PHOTO3", { path: "photos/p3.png", content: PNG });
    llm.script(
      reply.text("Noted.", (body) => {
        expect(typeof userMessage(body)?.content).toBe("string");
        expect(String(userMessage(body)?.content)).toContain("[attachment: image");
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER.id, type: "private" },
      from: OWNER,
      extra: {
        photo: [{ file_id: "PHOTO3", file_unique_id: "p3", width: 1, height: 1, file_size: PNG.length }],
      },
    });
    await waitFor(() => telegram.sentTexts().includes("Noted."), "the answer");
    expect(telegram.fileRequests).toHaveLength(0);
    llm.assertDone();
  });
});
