import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebChannel } from "../../channels/web.js";
import { parseConfig } from "../../src/config/load.js";
import type { InboundMessage } from "../../src/core/types.js";
import { ChannelAccessControl } from "../../src/security/access-control.js";
import { Authority } from "../../src/security/authority.js";
import { PairingStore } from "../../src/security/pairing.js";
import { Store } from "../../src/store/index.js";
import { RecordingSink } from "../channels/helpers.js";

const ID = "0b9f6a0c-3b51-4a53-9f0e-6f4c1f7f2a10";
let store: Store;
let channel: WebChannel;
let sink: RecordingSink;

beforeEach(async () => {
  store = Store.open(":memory:");
  channel = new WebChannel(store.kv);
  sink = new RecordingSink();
  await channel.start(sink);
});
afterEach(() => store.close());

describe("web channel", () => {
  it("normalizes a dashboard message as a DM from the dashboard user, shown in the transcript", async () => {
    expect(channel.status().state).toBe("connected");
    expect(await channel.receive("hello", ID)).toEqual({ status: "accepted", inboxId: 1 });
    expect(sink.messages[0]).toMatchObject({
      channel: "web",
      chatId: "dashboard",
      userId: "dashboard",
      messageId: ID,
      text: "hello",
      isDirect: true,
      mentionsBot: true,
    });
    expect(channel.transcript().map((entry) => [entry.from, entry.text])).toEqual([["owner", "hello"]]);
  });

  it("a resent form (same message id) is a duplicate and shown once", async () => {
    await channel.receive("hello", ID);
    expect(await channel.receive("hello", ID)).toEqual({ status: "duplicate" });
    expect(sink.messages).toHaveLength(1);
    expect(channel.transcript()).toHaveLength(1);
  });

  it("replies land in the transcript once (a retry after the part was stored adds nothing), edits replace", async () => {
    const target = { channel: "web", chatId: "dashboard" };
    const parts: string[] = [];
    const progress = { partsSent: 0, onPartSent: (_index: number, id: string) => void parts.push(id) };
    const { messageIds } = await channel.send(target, { text: "draft…" }, progress);
    await channel.send(target, { text: "draft…" }, { ...progress, partsSent: 1 });
    await channel.edit(target, messageIds[0]!, { text: "final answer" });
    expect(channel.transcript().map((entry) => entry.text)).toEqual(["final answer"]);
    await channel.send(target, { text: "approve?", buttons: [[{ id: "approve:1", label: "Approve" }]] });
    expect(channel.transcript()[1]?.buttons?.[0]?.[0]?.id).toBe("approve:1");
    expect(parts).toEqual(messageIds);
  });

  it("the transcript survives a restart (it is in the database)", async () => {
    await channel.receive("remember me", ID);
    await channel.send({ channel: "web", chatId: "dashboard" }, { text: "I will" });
    await channel.stop();
    const again = new WebChannel(store.kv);
    expect(again.transcript().map((entry) => entry.text)).toEqual(["remember me", "I will"]);
  });

  it("a 1 MB message reaches the sink whole; its transcript line is cut, and the stored transcript stays bounded", async () => {
    const big = "x".repeat(1_000_000);
    for (let index = 0; index < 60; index += 1) {
      await channel.receive(big, `${ID.slice(0, -2)}${String(index).padStart(2, "0")}`);
    }
    expect(sink.messages[0]!.text.length).toBe(1_000_000);
    const lines = new WebChannel(store.kv).transcript();
    expect(lines.at(-1)!.text).toMatch(
      /^x{20000}\n… \(980,000 more characters, kept in the session's history\)$/,
    );
    const stored = lines.reduce((sum, line) => sum + line.text.length, 0);
    expect(stored).toBeLessThanOrEqual(1_000_000);
    expect(lines.length).toBeGreaterThan(40);
  });

  it("presses reach the sink as the dashboard user's", async () => {
    await channel.press("approve:abc");
    expect(sink.presses[0]).toMatchObject({ channel: "web", userId: "dashboard", buttonId: "approve:abc" });
  });

  it("once stopped, takes nothing", async () => {
    await channel.stop();
    expect((await channel.receive("late", ID)).status).toBe("rejected");
    expect(sink.messages).toHaveLength(0);
  });
});

describe("web channel access", () => {
  const message: InboundMessage = {
    channel: "web",
    chatId: "dashboard",
    messageId: "1",
    userId: "dashboard",
    userName: "dashboard",
    text: "hi",
    isDirect: true,
    mentionsBot: true,
    attachments: [],
    receivedAt: 0,
  };
  const access = (dashboard: Record<string, unknown>) => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-web-access-"));
    const config = parseConfig({ http: { dashboard } }, { env: {}, cwd });
    const pairing = new PairingStore(Store.open(":memory:").db, { now: () => 0 });
    return { control: new ChannelAccessControl(config, pairing), authority: new Authority(config, pairing) };
  };

  it("is refused while the dashboard is disabled (nothing else may speak as `web`)", () => {
    const { control } = access({ enabled: false });
    expect(control.check(message).allow).toBe(false);
    expect(control.allowsPress({ ...message, buttonId: "approve:1" })).toBe(false);
  });

  it("is allowed with the dashboard enabled, and its sender is an owner", () => {
    const { control, authority } = access({ enabled: true, token: "0123456789abcdef0123" });
    expect(control.check(message)).toEqual({ allow: true });
    expect(control.allowsPress({ ...message, buttonId: "approve:1" })).toBe(true);
    expect(authority.roleOf("web", "dashboard")).toBe("owner");
  });
});
