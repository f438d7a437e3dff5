import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { errorCode } from "../tools/tool-harness.js";

/**
 * Attack: a message carries an attachment whose URL points somewhere else than the platform's file host (here a
 * canary on 127.0.0.1, a different port from the fake). `attachment_save` must refuse it and the canary must
 * receive nothing — above all no `Authorization: Bearer xoxb-…`. Real grammY / discord.js / Bolt clients talk
 * to the fakes; the agent is the scripted LLM.
 */

const canary = { requests: [] as Array<{ url: string; headers: http.IncomingHttpHeaders }>, port: 0 };
let canaryServer: http.Server;

beforeAll(async () => {
  canaryServer = http.createServer((request, response) => {
    canary.requests.push({ url: request.url ?? "", headers: request.headers });
    response.end("CANARY-REACHED");
  });
  await new Promise<void>((resolve) => canaryServer.listen(0, "127.0.0.1", resolve));
  canary.port = (canaryServer.address() as AddressInfo).port;
  // Control: the canary answers when contacted directly, so "no request" below means something.
  expect(await (await fetch(`http://127.0.0.1:${canary.port}/control`)).text()).toBe("CANARY-REACHED");
  canary.requests.length = 0;
});

afterAll(async () => {
  expect(canary.requests).toEqual([]);
  await new Promise((resolve) => canaryServer.close(resolve));
});

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
  expect(canary.requests).toEqual([]);
});

async function appWith(channels: ConfigInput["channels"]): Promise<TestApp> {
  const testApp = await startTestApp({
    features: [accessFeature],
    loadChannels: true,
    channel: null,
    config: { channels },
  });
  cleanup.push(() => testApp.stop());
  return testApp;
}

/** Scripts one `attachment_save` call and resolves with the tool result the model saw, then a final answer. */
function scriptSave(testApp: TestApp, answer: string): Promise<string> {
  return new Promise((resolve) => {
    testApp.llm!.script(
      reply.toolCalls([{ name: "attachment_save", arguments: {} }]),
      reply.text(answer, (body) => resolve(String(body.messages.at(-1)?.content))),
    );
  });
}

const canaryUrl = (name: string) => `http://127.0.0.1:${canary.port}/${name}`;

describe("attachments come only from the platform's own file host", () => {
  it("Slack: a file URL pointing at another host is refused and the bot token is never sent there", async () => {
    const slack = await new FakeSlack().start();
    cleanup.push(() => slack.close());
    const testApp = await appWith({
      slack: {
        botToken: slack.botToken,
        appToken: slack.appToken,
        apiUrl: slack.apiUrl,
        allowFrom: ["U0ALICE"],
      },
    });
    const dmWithFile = (file: Record<string, unknown>) =>
      slack.sendEnvelope(
        "events_api",
        slack.eventCallback({
          type: "message",
          channel: "D0DM",
          channel_type: "im",
          user: "U0ALICE",
          text: "keep this",
          ts: slack.nextTs(),
          files: [{ id: "F1", name: "notes.txt", mimetype: "text/plain", size: 5, ...file }],
        }),
      );

    for (const [index, url] of [
      canaryUrl("files-pri/T0/notes.txt"),
      `http://[::ffff:127.0.0.1]:${canary.port}/x`,
      `https://files.slack.com.evil.test:${canary.port}/x`,
      `http://files.slack.com:${canary.port}/x`,
    ].entries()) {
      const result = scriptSave(testApp, `refused ${index}`);
      dmWithFile({ url_private: url, url_private_download: url });
      const text = await result;
      expect(errorCode(text), url).toBe("attachment.foreign_host");
      expect(text).not.toContain(slack.botToken);
      await waitFor(() => slack.callsOf("chat.postMessage").length > index, "the answer");
    }
    const [audit] = testApp.app.store.audit.recent(1);
    expect(audit).toMatchObject({
      tool: "attachment_save",
      verdict: "deny",
      errorCode: "attachment.foreign_host",
    });

    // Control: the workspace's own file URL (the fake, i.e. the configured apiUrl's origin) works.
    slack.files.set("F2", Buffer.from("hello"));
    const saved = scriptSave(testApp, "saved");
    dmWithFile({ id: "F2", url_private: `${slack.baseUrl}/files/F2` });
    expect(JSON.parse(await saved)).toMatchObject({ ok: true, bytes: 5 });
    expect(readFileSync(path.join(testApp.config.workspace, "attachments", "notes.txt"), "utf8")).toBe(
      "hello",
    );
    testApp.llm!.assertDone();
  });

  it("Discord: an attachment URL off Discord's CDN is refused; the CDN (the fake's origin) works", async () => {
    const discord = await new FakeDiscord().start();
    cleanup.push(() => discord.close());
    const testApp = await appWith({
      discord: { token: discord.validToken, apiBase: discord.apiBase, allowFrom: [DISCORD_USER.id] },
    });
    const attachment = (url: string) => ({
      id: "600000000000000001",
      filename: "log.txt",
      size: 8,
      url,
      proxy_url: "",
      content_type: "text/plain",
    });
    for (const url of [
      canaryUrl("attachments/1/2/log.txt"),
      `https://cdn.discordapp.com.evil.test:${canary.port}/a`,
    ]) {
      const result = scriptSave(testApp, "refused");
      discord.sendMessage({ content: "keep", attachments: [attachment(url)] });
      expect(errorCode(await result), url).toBe("attachment.foreign_host");
    }
    discord.cdnFiles.set("a/log.txt", Buffer.from("log body"));
    const saved = scriptSave(testApp, "saved");
    discord.sendMessage({
      content: "keep",
      attachments: [attachment(`${discord.apiBase.replace(/\/api$/, "")}/cdn/a/log.txt`)],
    });
    expect(JSON.parse(await saved)).toMatchObject({ ok: true, bytes: 8 });
    testApp.llm!.assertDone();
  });

  it("Telegram: a getFile path that escapes the bot's file directory is refused before any download", async () => {
    const telegram = await new FakeTelegram().start();
    cleanup.push(() => telegram.close());
    const owner = { id: 777, first_name: "Alice" };
    const testApp = await appWith({
      telegram: {
        token: telegram.validToken,
        apiRoot: telegram.apiRoot,
        pacing: false,
        allowFrom: [owner.id],
      },
    });
    const sendDocument = (fileId: string) =>
      telegram.pushMessage({
        chat: { id: owner.id, type: "private" },
        from: owner,
        extra: {
          caption: "keep",
          document: {
            file_id: fileId,
            file_unique_id: "u",
            file_name: "notes.txt",
            mime_type: "text/plain",
            file_size: 4,
          },
        },
      });
    const escapes = [
      "../../etc/passwd",
      "documents/../../../x",
      "%2e%2e/%2e%2e/x",
      canaryUrl("x"),
      `//127.0.0.1:${canary.port}/x`,
      "/absolute/x",
      "documents\\..\\x",
    ];
    for (const [index, filePath] of escapes.entries()) {
      telegram.files.set(`EVIL${index}`, { path: filePath, content: Buffer.from("evil") });
      const result = scriptSave(testApp, `refused ${index}`);
      sendDocument(`EVIL${index}`);
      expect(errorCode(await result), filePath).toBe("attachment.foreign_host");
    }
    expect(telegram.fileRequests).toEqual([]);

    telegram.files.set("DOC1", { path: "documents/notes.txt", content: Buffer.from("fine") });
    const saved = scriptSave(testApp, "saved");
    sendDocument("DOC1");
    expect(JSON.parse(await saved)).toMatchObject({ ok: true, bytes: 4 });
    expect(telegram.fileRequests).toEqual([`/file/bot${telegram.validToken}/documents/notes.txt`]);
    testApp.llm!.assertDone();
  });
});
