import { afterEach, describe, expect, it } from "vitest";
import type { ChannelDeps } from "../../channels/channel-deps.js";
import { MatrixChannel, NUMBER_KEYS } from "../../channels/matrix.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeMatrix, MATRIX_BOT } from "../fakes/matrix.js";
import { runAdapterContract, type SentRecord } from "./adapter-contract.js";
import { channelDeps, RecordingSink } from "./helpers.js";

const USER = "@alice:fake.test";
const OTHER_BOT = "@otherbot:fake.test";
const DM = "!dm:fake.test";
const GROUP = "!ops:fake.test";

/** ChannelDeps with a `channels.matrix` section (validated like a real config file). */
function matrixDeps(section: Record<string, unknown>, store?: ChannelDeps["store"]): ChannelDeps {
  const deps = channelDeps({ matrix: section });
  return store ? { ...deps, store } : deps;
}

function matrixAdapter(fake: FakeMatrix, extra: Record<string, unknown> = {}, store?: ChannelDeps["store"]) {
  return new MatrixChannel(
    matrixDeps({ homeserverUrl: fake.homeserverUrl, accessToken: fake.validToken, ...extra }, store),
  );
}

function seeded(fake: FakeMatrix): FakeMatrix {
  fake.addRoom(DM, [USER]);
  fake.addRoom(GROUP, [USER, "@bob:fake.test", OTHER_BOT]);
  return fake;
}

/** Messages the bot sent (not edits, not reactions), as the contract sees them. */
function sentRecords(fake: FakeMatrix): SentRecord[] {
  return fake
    .sentEvents("m.room.message")
    .filter((event) => {
      const relation = event.content["m.relates_to"] as { rel_type?: string } | undefined;
      return relation?.rel_type !== "m.replace" && event.content.msgtype !== "m.notice";
    })
    .map((event) => {
      const relation = event.content["m.relates_to"] as
        | { "m.in_reply_to"?: { event_id?: string } }
        | undefined;
      const buttons = (event.content["io.magpie.buttons"] ?? []) as Array<{ id: string }>;
      return {
        chatId: event.room_id,
        text: String(event.content.formatted_body ?? event.content.body),
        replyTo: relation?.["m.in_reply_to"]?.event_id,
        formatted: event.content.format === "org.matrix.custom.html",
        buttons: buttons.map((button) => button.id),
      };
    });
}

runAdapterContract("matrix", async () => {
  const fake = seeded(await new FakeMatrix().start());
  return {
    adapter: () => matrixAdapter(fake),
    adapterWithWrongToken: () =>
      new MatrixChannel(matrixDeps({ homeserverUrl: fake.homeserverUrl, accessToken: "syt_wrong" })),
    tokenEnvVar: "MATRIX_ACCESS_TOKEN",
    maxMessageLength: 6000,
    renderedBold: "<b>answer</b>",
    skips: { formatting: "Matrix servers never reject formatting: clients render formatted_body or body" },
    directChatId: DM,
    groupChatId: GROUP,
    sendDirect: async (text) => {
      fake.pushText(DM, USER, text);
    },
    sendGroup: async (text, { mention, fromBot }) => {
      // Matrix has no bot flag: bots send m.notice, which the spec asks other bots never to answer.
      if (fromBot) {
        fake.push(GROUP, OTHER_BOT, "m.room.message", {
          msgtype: "m.notice",
          body: `${MATRIX_BOT} ${text}`,
          "m.mentions": { user_ids: [MATRIX_BOT] },
        });
        return;
      }
      fake.pushText(
        GROUP,
        USER,
        mention ? `magpie: ${text}` : text,
        mention ? { "m.mentions": { user_ids: [MATRIX_BOT] } } : {},
      );
    },
    sent: () => sentRecords(fake),
    failNextSend: (kind) => {
      if (kind === "rate-limit")
        fake.failNext(/^PUT \/rooms\/.*\/send\/m\.room\.message\//, 429, "M_LIMIT_EXCEEDED", 500);
    },
    failNextEdit: () => fake.failNext(/^PUT \/rooms\/.*\/send\/m\.room\.message\//, 403, "M_FORBIDDEN"),
    pressButton: async (buttonId) => {
      const last = fake.sentEvents("m.room.message").at(-1)!;
      const buttons = last.content["io.magpie.buttons"] as Array<{ id: string; key: string }>;
      const key = buttons.find((button) => button.id === buttonId)!.key;
      fake.push(last.room_id, USER, "m.reaction", {
        "m.relates_to": { rel_type: "m.annotation", event_id: last.event_id, key },
      });
    },
    typingCount: () => fake.typingCount,
    edits: () =>
      fake
        .sentEvents("m.room.message")
        .filter(
          (event) =>
            (event.content["m.relates_to"] as { rel_type?: string } | undefined)?.rel_type === "m.replace",
        )
        .map((event) => ({
          messageId: String((event.content["m.relates_to"] as { event_id: string }).event_id),
          text: String((event.content["m.new_content"] as { body: string }).body),
        })),
    dropConnections: async (dropping) => {
      fake.dropping = dropping;
    },
    close: () => fake.close(),
  };
});

describe("matrix specifics", () => {
  let fake: FakeMatrix;
  let cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const task of cleanup.reverse()) await task();
    cleanup = [];
  });

  async function started(store?: ChannelDeps["store"]) {
    fake ??= seeded(await new FakeMatrix().start());
    const adapter = matrixAdapter(fake, {}, store);
    const sink = new RecordingSink();
    cleanup.push(() => adapter.stop());
    await adapter.start(sink);
    await waitFor(() => adapter.status().state === "connected", "connected");
    return { adapter, sink };
  }

  async function freshFake() {
    fake = seeded(await new FakeMatrix().start());
    cleanup.push(() => fake.close());
  }

  it("answers an encrypted room with one notice through the raw API, and nothing else", async () => {
    await freshFake();
    fake.addRoom("!secret:fake.test", [USER], { encrypted: true });
    const { sink } = await started();
    for (let index = 0; index < 3; index++) {
      fake.push("!secret:fake.test", USER, "m.room.encrypted", {
        algorithm: "m.megolm.v1.aes-sha2",
        ciphertext: `opaque${index}`,
      });
    }
    fake.pushText(DM, USER, "marker");
    await waitFor(() => sink.messages.find((message) => message.text === "marker"), "marker");
    const inSecret = fake.sentEvents().filter((event) => event.room_id === "!secret:fake.test");
    expect(inSecret).toHaveLength(1);
    expect(inSecret[0]).toMatchObject({ type: "m.room.message", content: { msgtype: "m.notice" } });
    expect(String(inSecret[0]!.content.body)).toMatch(/encrypt/i);
    expect(sink.messages.map((message) => message.chatId)).not.toContain("!secret:fake.test");
  });

  it("resumes from the stored since token: a restart answers new messages once and old ones never", async () => {
    await freshFake();
    fake.pushText(DM, USER, "before magpie ever started");
    const first = await started();
    fake.pushText(DM, USER, "one");
    await waitFor(() => first.sink.messages.length === 1, "one");
    await first.adapter.stop();
    fake.pushText(DM, USER, "while down");
    const store = (first.adapter as unknown as { deps: ChannelDeps }).deps.store;
    const second = await started(store);
    fake.pushText(DM, USER, "after restart");
    await waitFor(() => second.sink.messages.length === 2, "two after restart");
    expect(first.sink.messages.map((message) => message.text)).toEqual(["one"]);
    expect(second.sink.messages.map((message) => message.text)).toEqual(["while down", "after restart"]);
  });

  it("normalizes a reply to the bot with its fallback stripped, and a file with a download", async () => {
    await freshFake();
    const { adapter, sink } = await started();
    const { messageIds } = await adapter.send(
      { channel: "matrix", chatId: GROUP },
      { text: "earlier answer" },
    );
    fake.pushText(GROUP, USER, `> <${MATRIX_BOT}> earlier answer\n\nand then?`, {
      "m.relates_to": { "m.in_reply_to": { event_id: messageIds[0] } },
    });
    const reply = await waitFor(() => sink.messages[0], "reply");
    expect(reply).toMatchObject({
      text: "and then?",
      isDirect: false,
      mentionsBot: true,
      replyTo: { messageId: messageIds[0], fromBot: true, text: "earlier answer" },
    });
    fake.uploads.set("report1", { type: "text/plain", bytes: Buffer.from("report body") });
    fake.push(DM, USER, "m.room.message", {
      msgtype: "m.file",
      body: "report.txt",
      url: "mxc://fake.test/report1",
      info: { mimetype: "text/plain", size: 11 },
    });
    const file = await waitFor(() => sink.messages[1], "file");
    expect(file.attachments).toEqual([
      { kind: "file", id: "mxc://fake.test/report1", name: "report.txt", mime: "text/plain", size: 11 },
    ]);
    expect((await adapter.download!(file.attachments[0]!)).toString()).toBe("report body");
  });

  it("joins a room it is invited to, and a two-member room is a DM", async () => {
    await freshFake();
    const { sink } = await started();
    fake.invite("!new:fake.test", "@carol:fake.test");
    await waitFor(() => fake.calls.some((call) => call.path === "/join/!new:fake.test"), "join");
    fake.rooms.get("!new:fake.test")!.members.push(MATRIX_BOT);
    fake.pushText("!new:fake.test", "@carol:fake.test", "hi, who are you?");
    const inbound = await waitFor(() => sink.messages[0], "DM from the invite");
    expect(inbound).toMatchObject({ chatId: "!new:fake.test", userId: "@carol:fake.test", isDirect: true });
  });

  it("offers buttons as 1️⃣ 2️⃣ reactions and ignores a reaction that is no button", async () => {
    await freshFake();
    const { adapter, sink } = await started();
    const { messageIds } = await adapter.send(
      { channel: "matrix", chatId: DM },
      {
        text: "Pick one",
        buttons: [
          [
            { id: "a", label: "Apple" },
            { id: "b", label: "Banana" },
          ],
        ],
      },
    );
    const reactions = fake.sentEvents("m.reaction").map((event) => event.content["m.relates_to"]);
    expect(reactions).toEqual([
      { rel_type: "m.annotation", event_id: messageIds[0], key: NUMBER_KEYS[0] },
      { rel_type: "m.annotation", event_id: messageIds[0], key: NUMBER_KEYS[1] },
    ]);
    const [sent] = sentRecords(fake);
    expect(sent!.text).toContain("1️⃣ Apple");
    fake.push(DM, USER, "m.reaction", {
      "m.relates_to": { rel_type: "m.annotation", event_id: messageIds[0], key: "👍" },
    });
    fake.push(DM, USER, "m.reaction", {
      "m.relates_to": { rel_type: "m.annotation", event_id: messageIds[0], key: NUMBER_KEYS[1] },
    });
    const press = await waitFor(() => sink.presses[0], "press");
    expect(press).toMatchObject({ buttonId: "b", userId: USER, isDirect: true });
    expect(sink.presses).toHaveLength(1);
  });

  it("renders Markdown to Matrix HTML with escaping and line breaks", async () => {
    await freshFake();
    const { adapter } = await started();
    await adapter.send(
      { channel: "matrix", chatId: DM },
      { text: "a < b & **bold**\nnext line\n```\nx\ny\n```" },
    );
    const [event] = fake.sentEvents("m.room.message");
    // Line breaks outside a code block become <br>; inside <pre> they stay.
    expect(event!.content.formatted_body).toBe("a &lt; b &amp; <b>bold</b><br>next line<br><pre>x\ny</pre>");
    // body is the plain fallback: the Markdown as written.
    expect(event!.content.body).toBe("a < b & **bold**\nnext line\n```\nx\ny\n```");
  });

  it("uploads a file to the media repository and sends it as m.image", async () => {
    await freshFake();
    const { adapter } = await started();
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(`${tmpdir()}/magpie-matrix-`);
    writeFileSync(`${dir}/shot.png`, Buffer.from("PNGDATA"));
    await adapter.send(
      { channel: "matrix", chatId: DM },
      { text: "here", file: { path: `${dir}/shot.png`, name: "shot.png", kind: "photo", mime: "image/png" } },
    );
    const image = fake.sentEvents("m.room.message").find((event) => event.content.msgtype === "m.image");
    expect(image?.content).toMatchObject({ body: "shot.png", info: { mimetype: "image/png", size: 7 } });
    const id = String(image!.content.url).split("/").pop()!;
    expect(fake.uploads.get(id)?.bytes.toString()).toBe("PNGDATA");
    // A spoken reply (voice replies) goes as m.audio marked as a voice message.
    writeFileSync(`${dir}/reply.ogg`, Buffer.from("OggS..."));
    await adapter.send(
      { channel: "matrix", chatId: DM },
      { text: "", file: { path: `${dir}/reply.ogg`, name: "reply.ogg", kind: "voice", mime: "audio/ogg" } },
    );
    const audio = fake.sentEvents("m.room.message").find((event) => event.content.msgtype === "m.audio");
    expect(audio?.content).toMatchObject({ body: "reply.ogg", info: { mimetype: "audio/ogg" } });
    expect(audio?.content).toHaveProperty(["org.matrix.msc3245.voice"]);
  });
});
