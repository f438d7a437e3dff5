import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCORD_DM_CHANNEL_ID, DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

/**
 * Media in and out through the shipped build (`node dist/bundle/main.js start`) on Telegram, Discord and Slack
 * at once: a photo reaches the model as an image part, a voice note as a transcript, a document is saved into
 * the workspace by `attachment_save`, and `message {file}` sends a workspace file back through each platform.
 */

const OWNER = { id: 501, first_name: "Alice" };
const SLACK_USER = "U0ALICE";
const SLACK_DM = "D0DM";
/** A real 1×1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
  "base64",
);
const PNG_URL = `data:image/png;base64,${PNG.toString("base64")}`;
const REPORT = "disk usage report\n/ 42%\n";

/** The last user message's content as the model got it (a string, or parts when an image goes with it). */
const userContent = (body: ChatRequestBody) =>
  body.messages.findLast((message) => message.role === "user")?.content as unknown;

describe("shipped build: media in and out on Telegram, Discord and Slack", () => {
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    [telegram, discord, slack, llm] = await Promise.all([
      new FakeTelegram().start(),
      new FakeDiscord().start(),
      new FakeSlack().start(),
      startOpenAiFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        llm: {
          baseUrl: llm.url,
          apiKey: "sk-test",
          model: "test-model",
          // llm.vision left at its default (auto): images go out, and a refusal falls back to text.
          transcriptionModel: "whisper-test",
        },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id],
          },
          discord: { token: discord.validToken, apiBase: discord.apiBase, allowFrom: [DISCORD_USER.id] },
          slack: {
            botToken: slack.botToken,
            appToken: slack.appToken,
            apiUrl: slack.apiUrl,
            pacing: false,
            allowFrom: [SLACK_USER],
          },
        },
        // attachment_save is a medium-risk tool; nothing here is meant to wait for an owner's approval.
        security: { approvals: { require: [] } },
      },
    });
    writeFileSync(path.join(bot.workspace, "chart.png"), PNG);
    writeFileSync(path.join(bot.workspace, "report.txt"), REPORT);
    await waitFor(
      () => slack.socketConnected && discord.identifies > 0,
      "Slack and Discord connected",
      20_000,
    );
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), discord?.close(), slack?.close(), llm?.close()]);
  });

  describe("Telegram", () => {
    const dm = (fields: { text?: string; extra?: Record<string, unknown> }) =>
      telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, ...fields });

    it("a photo reaches the model as an image part; message {file} sends a PNG back with sendPhoto", async () => {
      telegram.files.set("PHOTO1", { path: "photos/p1.png", content: PNG });
      let content: unknown;
      let seen: Record<string, string> = {};
      llm.script(
        reply.toolCalls(
          [{ name: "message", arguments: { content: "Here is the chart", file: "chart.png" } }],
          (body) => {
            content = userContent(body);
          },
        ),
        reply.text("Sent you the chart.", (body) => {
          seen = toolResults(body);
        }),
      );
      dm({
        extra: {
          caption: "what is this?",
          photo: [{ file_id: "PHOTO1", file_unique_id: "p1", width: 1, height: 1, file_size: PNG.length }],
        },
      });
      await waitFor(() => telegram.sentTexts().includes("Sent you the chart."), "the answer", 20_000);
      expect(Array.isArray(content)).toBe(true);
      const parts = content as Array<Record<string, unknown>>;
      expect(String(parts[0]?.text)).toContain("what is this?");
      expect(parts[1]).toEqual({ type: "image_url", image_url: { url: PNG_URL } });
      expect(JSON.parse(seen.message ?? "{}")).toMatchObject({
        ok: true,
        status: "sent",
        file: { name: "chart.png", sent_as: "photo" },
      });
      const [photo] = telegram.callsOf("sendPhoto").filter((call) => !call.failed);
      expect(photo?.body).toMatchObject({ chat_id: String(OWNER.id), caption: "Here is the chart" });
      expect(photo?.uploads?.photo?.content.equals(PNG)).toBe(true);
      llm.assertDone();
    });

    it("a voice note is transcribed through /audio/transcriptions and the transcript reaches the model", async () => {
      const audio = Buffer.from("OggS fake opus bytes");
      telegram.files.set("VOICE1", { path: "voice/v1.oga", content: audio });
      llm.transcript = "remind me to water the plants";
      let content: unknown;
      llm.script(
        reply.text("Will do.", (body) => {
          content = userContent(body);
        }),
      );
      dm({
        extra: {
          voice: {
            file_id: "VOICE1",
            file_unique_id: "v1",
            duration: 2,
            mime_type: "audio/ogg",
            file_size: audio.length,
          },
        },
      });
      await waitFor(() => telegram.sentTexts().includes("Will do."), "the answer", 20_000);
      expect(String(content)).toContain("[voice note transcript]: remind me to water the plants");
      expect(llm.transcriptionRequests).toEqual([{ model: "whisper-test", bytes: audio.length }]);
      llm.assertDone();
    });

    it("a document is saved into the workspace (attachment_save) and a text file goes back with sendDocument", async () => {
      telegram.files.set("DOC1", { path: "documents/notes.txt", content: Buffer.from("disk is 91% full") });
      let saved: Record<string, string> = {};
      let sent: Record<string, string> = {};
      llm.script(
        reply.toolCalls([{ name: "attachment_save", arguments: {} }], (body) => {
          expect(String(userContent(body))).toContain(
            '[attachment: file "notes.txt" (text/plain, 16 bytes)]',
          );
        }),
        reply.toolCalls(
          [{ name: "message", arguments: { content: "The report", file: "report.txt" } }],
          (body) => {
            saved = toolResults(body);
          },
        ),
        reply.text("Saved it and sent the report.", (body) => {
          sent = toolResults(body);
        }),
      );
      dm({
        extra: {
          caption: "keep this",
          document: {
            file_id: "DOC1",
            file_unique_id: "d1",
            file_name: "notes.txt",
            mime_type: "text/plain",
            file_size: 16,
          },
        },
      });
      await waitFor(
        () => telegram.sentTexts().includes("Saved it and sent the report."),
        "the answer",
        20_000,
      );
      expect(JSON.parse(saved.attachment_save ?? "{}")).toMatchObject({
        ok: true,
        path: "attachments/notes.txt",
        bytes: 16,
      });
      expect(readFileSync(path.join(bot.workspace, "attachments", "notes.txt"), "utf8")).toBe(
        "disk is 91% full",
      );
      expect(JSON.parse(sent.message ?? "{}")).toMatchObject({ ok: true, file: { sent_as: "document" } });
      const [document] = telegram.callsOf("sendDocument").filter((call) => !call.failed);
      expect(document?.uploads?.document?.content.toString()).toBe(REPORT);
      expect(document?.body).toMatchObject({ caption: "The report" });
      llm.assertDone();
    });
  });

  describe("llm.vision auto", () => {
    it("a model that refuses the image gets the text alone, and the user still gets an answer", async () => {
      telegram.files.set("PHOTO2", { path: "photos/p2.png", content: PNG });
      let retried: unknown;
      llm.script(
        reply.error(400, "this model does not support image inputs"),
        reply.text("I can't see images, but I got your message.", (body) => {
          retried = userContent(body);
        }),
      );
      telegram.pushMessage({
        chat: { id: OWNER.id, type: "private" },
        from: OWNER,
        extra: {
          caption: "and this one?",
          photo: [{ file_id: "PHOTO2", file_unique_id: "p2", width: 1, height: 1, file_size: PNG.length }],
        },
      });
      await waitFor(
        () => telegram.sentTexts().includes("I can't see images, but I got your message."),
        "the answer",
        20_000,
      );
      expect(Array.isArray(llm.requests.at(-2)?.messages.at(-1)?.content)).toBe(true);
      expect(typeof retried).toBe("string");
      expect(String(retried)).toContain("and this one?");
      expect(String(retried)).toContain("could not take the image");
      expect(bot.logsOf("vision-refused-text-only")).toHaveLength(1);
      llm.assertDone();
    });
  });

  describe("Discord", () => {
    const MESSAGES = /^\/channels\/\d+\/messages$/;
    const sentContents = () =>
      discord.callsOf("POST", MESSAGES).map((call) => String(call.body.content ?? ""));
    const cdn = (name: string) => `${discord.apiBase.replace(/\/api$/, "")}/cdn/${name}`;

    it("an image attachment reaches the model as an image part; a text file is saved; message {file} uploads the PNG", async () => {
      discord.cdnFiles.set("att/photo.png", PNG);
      discord.cdnFiles.set("att/log.txt", Buffer.from("log body"));
      let content: unknown;
      let seen: Record<string, string> = {};
      llm.script(
        reply.text("A tiny picture.", (body) => {
          content = userContent(body);
        }),
        reply.toolCalls([{ name: "attachment_save", arguments: {} }]),
        reply.toolCalls([{ name: "message", arguments: { content: "CPU chart", file: "chart.png" } }]),
        reply.text("Saved the log, sent the chart.", (body) => {
          seen = toolResults(body);
        }),
      );
      discord.sendMessage({
        content: "what is this?",
        attachments: [
          {
            id: "600000000000000001",
            filename: "photo.png",
            size: PNG.length,
            url: cdn("att/photo.png"),
            proxy_url: "",
            content_type: "image/png",
            width: 1,
            height: 1,
          },
        ],
      });
      await waitFor(() => sentContents().includes("A tiny picture."), "the picture answer", 20_000);
      const parts = content as Array<Record<string, unknown>>;
      expect(Array.isArray(parts)).toBe(true);
      expect(String(parts[0]?.text)).toContain("what is this?");
      expect(parts[1]).toEqual({ type: "image_url", image_url: { url: PNG_URL } });

      discord.sendMessage({
        content: "keep this log",
        attachments: [
          {
            id: "600000000000000002",
            filename: "log.txt",
            size: 8,
            url: cdn("att/log.txt"),
            proxy_url: "",
            content_type: "text/plain",
          },
        ],
      });
      await waitFor(() => sentContents().includes("Saved the log, sent the chart."), "the answer", 20_000);
      expect(JSON.parse(seen.attachment_save ?? "{}")).toMatchObject({
        ok: true,
        path: "attachments/log.txt",
      });
      expect(readFileSync(path.join(bot.workspace, "attachments", "log.txt"), "utf8")).toBe("log body");
      expect(JSON.parse(seen.message ?? "{}")).toMatchObject({ ok: true, status: "sent" });
      const upload = discord.callsOf("POST", MESSAGES).find((call) => call.uploads);
      expect(upload?.path).toBe(`/channels/${DISCORD_DM_CHANNEL_ID}/messages`);
      expect(upload?.body).toMatchObject({
        content: "CPU chart",
        attachments: [{ id: 0, filename: "chart.png" }],
      });
      expect(Object.values(upload?.uploads ?? {})[0]?.content.equals(PNG)).toBe(true);
      llm.assertDone();
    });
  });

  describe("Slack", () => {
    const sentTexts = () => slack.callsOf("chat.postMessage").map((call) => String(call.body.text));
    const dmWithFile = (text: string, file: Record<string, unknown>) =>
      slack.sendEnvelope(
        "events_api",
        slack.eventCallback({
          type: "message",
          channel: SLACK_DM,
          channel_type: "im",
          user: SLACK_USER,
          text,
          ts: slack.nextTs(),
          files: [file],
        }),
      );

    it("an image file reaches the model as an image part; a text file is saved; message {file} shares the PNG", async () => {
      slack.files.set("F1", PNG);
      slack.files.set("F2", Buffer.from("hello"));
      let content: unknown;
      let seen: Record<string, string> = {};
      llm.script(
        reply.text("A tiny Slack picture.", (body) => {
          content = userContent(body);
        }),
        reply.toolCalls([{ name: "attachment_save", arguments: {} }]),
        reply.toolCalls([{ name: "message", arguments: { content: "CPU chart", file: "chart.png" } }]),
        reply.text("Saved the notes, shared the chart.", (body) => {
          seen = toolResults(body);
        }),
      );
      dmWithFile("what is this?", {
        id: "F1",
        name: "photo.png",
        mimetype: "image/png",
        size: PNG.length,
        url_private: `${slack.baseUrl}/files/F1`,
        url_private_download: `${slack.baseUrl}/files/F1`,
      });
      await waitFor(() => sentTexts().includes("A tiny Slack picture."), "the picture answer", 20_000);
      const parts = content as Array<Record<string, unknown>>;
      expect(Array.isArray(parts)).toBe(true);
      expect(String(parts[0]?.text)).toContain("what is this?");
      expect(parts[1]).toEqual({ type: "image_url", image_url: { url: PNG_URL } });

      dmWithFile("keep these notes", {
        id: "F2",
        name: "notes.txt",
        mimetype: "text/plain",
        size: 5,
        url_private: `${slack.baseUrl}/files/F2`,
        url_private_download: `${slack.baseUrl}/files/F2`,
      });
      await waitFor(() => sentTexts().includes("Saved the notes, shared the chart."), "the answer", 20_000);
      expect(JSON.parse(seen.attachment_save ?? "{}")).toMatchObject({ ok: true, bytes: 5 });
      expect(readFileSync(path.join(bot.workspace, "attachments", "notes.txt"), "utf8")).toBe("hello");
      expect(JSON.parse(seen.message ?? "{}")).toMatchObject({ ok: true, status: "sent" });
      expect(slack.shared).toHaveLength(1);
      expect(slack.shared[0]).toMatchObject({ filename: "chart.png", channel: SLACK_DM });
      expect(slack.shared[0]?.content.equals(PNG)).toBe(true);
      llm.assertDone();
    });
    it("attack: files whose URL points off Slack's file host are never fetched, and the bot token goes nowhere", async () => {
      const canary: Array<{ url: string; authorization?: string }> = [];
      const server = http.createServer((request, response) => {
        canary.push({ url: request.url ?? "", authorization: request.headers.authorization });
        response.end("CANARY-REACHED");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const canaryUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        // Control: the canary answers when asked directly, so "no request" below means something.
        expect(await (await fetch(`${canaryUrl}/control`)).text()).toBe("CANARY-REACHED");
        canary.length = 0;
        let photoNote: unknown;
        let saveResult: Record<string, string> = {};
        llm.script(
          reply.text("No picture came through.", (body) => {
            photoNote = userContent(body);
          }),
          reply.toolCalls([{ name: "attachment_save", arguments: {} }]),
          reply.text("Could not save that one.", (body) => {
            saveResult = toolResults(body);
          }),
        );
        dmWithFile("look at this", {
          id: "F8",
          name: "evil.png",
          mimetype: "image/png",
          size: PNG.length,
          url_private: `${canaryUrl}/files-pri/T0/evil.png`,
          url_private_download: `${canaryUrl}/files-pri/T0/evil.png`,
        });
        await waitFor(() => sentTexts().includes("No picture came through."), "the photo answer", 20_000);
        dmWithFile("keep this", {
          id: "F9",
          name: "evil.txt",
          mimetype: "text/plain",
          size: 5,
          url_private: `${canaryUrl}/files-pri/T0/evil.txt`,
          url_private_download: `${canaryUrl}/files-pri/T0/evil.txt`,
        });
        await waitFor(() => sentTexts().includes("Could not save that one."), "the save answer", 20_000);
        // The image became a note, not an image part; the save was refused before any connection.
        expect(typeof photoNote).toBe("string");
        expect(String(photoNote)).toContain('["evil.png" could not be downloaded]');
        const refusal = JSON.parse(saveResult.attachment_save ?? "{}");
        expect(refusal).toMatchObject({ ok: false, error: { code: "attachment.foreign_host" } });
        expect(JSON.stringify(refusal)).not.toContain(slack.botToken);
        expect(canary).toEqual([]);
        llm.assertDone();
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });
});
