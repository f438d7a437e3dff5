import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { InboundMessage } from "../../src/core/types.js";
import { ChannelAccessControl } from "../../src/security/access-control.js";
import { PairingStore } from "../../src/security/pairing.js";
import { Store } from "../../src/store/index.js";

function setup(channels: Record<string, unknown> = {}) {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-access-"));
  const config = parseConfig({ channels }, { env: {}, cwd });
  const clock = { now: () => 1_000_000 };
  const store = Store.open(":memory:");
  const pairing = new PairingStore(store.db, clock);
  return { access: new ChannelAccessControl(config, pairing), pairing, clock };
}

function message(fields: Partial<InboundMessage> = {}): InboundMessage {
  return {
    channel: "telegram",
    chatId: "777",
    messageId: `m${Math.random()}`,
    userId: "777",
    userName: "alice",
    text: "hello",
    isDirect: true,
    mentionsBot: false,
    attachments: [],
    receivedAt: 0,
    ...fields,
  };
}

const CODE = /\b([A-HJ-NP-Z2-9]{8})\b/;

describe("access control: direct messages", () => {
  it("always lets the local console through", () => {
    const { access } = setup({ telegram: { dmPolicy: "disabled" } });
    expect(access.check(message({ channel: "console" }))).toEqual({ allow: true });
  });

  it("denies channels it does not know", () => {
    const { access } = setup();
    expect(access.check(message({ channel: "irc" })).allow).toBe(false);
  });

  it("pairing (default): an unknown sender gets a code and nothing else, once", () => {
    const { access } = setup();
    const first = access.check(message());
    expect(first.allow).toBe(false);
    if (first.allow) return;
    expect(first.reply).toMatch(CODE);
    expect(first.reply).toContain("magpie pair approve telegram");
    const again = access.check(message({ text: "please?" }));
    expect(again).toMatchObject({ allow: false });
    expect(again.allow === false && again.reply).toBeFalsy();
  });

  it("pairing: the approved sender is let in, and only on that channel", () => {
    const { access, pairing } = setup();
    const denied = access.check(message());
    const code = denied.allow ? "" : CODE.exec(denied.reply ?? "")![1]!;
    expect(pairing.approve("discord", code, "test").status).toBe("unknown");
    expect(pairing.approve("telegram", code.toLowerCase(), "test").status).toBe("approved");
    expect(access.check(message())).toEqual({ allow: true });
    expect(access.check(message({ channel: "discord" })).allow).toBe(false);
    expect(pairing.approve("telegram", code, "test").status).toBe("unknown");
  });

  it("pairing: at most 3 pending codes per channel; the 4th stranger gets no reply", () => {
    const { access } = setup();
    for (const userId of ["1", "2", "3"]) {
      const decision = access.check(message({ userId, chatId: userId }));
      expect(decision.allow === false && decision.reply).toMatch(CODE);
    }
    const fourth = access.check(message({ userId: "4", chatId: "4" }));
    expect(fourth).toMatchObject({ allow: false });
    expect(fourth.allow === false && fourth.reply).toBeFalsy();
    expect(access.check(message({ channel: "slack", userId: "4" })).allow === false).toBe(true);
  });

  it("pairing: a code expires after one hour and cannot be approved", () => {
    const { access, pairing, clock } = setup();
    const denied = access.check(message());
    const code = denied.allow ? "" : CODE.exec(denied.reply ?? "")![1]!;
    clock.now = () => 1_000_000 + 60 * 60 * 1000;
    expect(pairing.approve("telegram", code, "test").status).toBe("expired");
    const renewed = access.check(message());
    expect(renewed.allow).toBe(false);
    const newCode = renewed.allow ? "" : CODE.exec(renewed.reply ?? "")?.[1];
    expect(newCode).toBeDefined();
    expect(newCode).not.toBe(code);
  });

  it("pairing: a sender in allowFrom needs no code", () => {
    const { access } = setup({ telegram: { allowFrom: [777] } });
    expect(access.check(message())).toEqual({ allow: true });
  });

  it("allowlist: an empty allowFrom denies everyone, without a code", () => {
    const { access } = setup({ telegram: { dmPolicy: "allowlist" } });
    const decision = access.check(message());
    expect(decision).toMatchObject({ allow: false });
    expect(decision.allow === false && decision.reply).toBeFalsy();
  });

  it("allowlist: only allowFrom counts (a paired sender is not enough)", () => {
    const { access, pairing } = setup({ telegram: { dmPolicy: "allowlist", allowFrom: ["42"] } });
    pairing.issue({ channel: "telegram", userId: "777", chatId: "777" });
    const code = pairing.pending("telegram")[0]!.code;
    pairing.approve("telegram", code, "test");
    expect(access.check(message()).allow).toBe(false);
    expect(access.check(message({ userId: "42" })).allow).toBe(true);
  });

  it("open lets anyone in; disabled lets nobody in, not even allowFrom", () => {
    expect(setup({ telegram: { dmPolicy: "open" } }).access.check(message()).allow).toBe(true);
    const disabled = setup({ telegram: { dmPolicy: "disabled", allowFrom: ["777"] } }).access;
    expect(disabled.check(message()).allow).toBe(false);
  });
});

describe("access control: groups", () => {
  const group = (fields: Partial<InboundMessage> = {}) =>
    message({ isDirect: false, chatId: "-100", userId: "555", mentionsBot: true, ...fields });

  it("allowlist (default) with no groups denies every group, without a pairing code", () => {
    const { access } = setup();
    const decision = access.check(group());
    expect(decision).toMatchObject({ allow: false });
    expect(decision.allow === false && decision.reply).toBeFalsy();
  });

  it("a listed group is answered only when the bot is mentioned or replied to", () => {
    const { access } = setup({ telegram: { groups: [-100] } });
    expect(access.check(group()).allow).toBe(true);
    expect(access.check(group({ mentionsBot: false })).allow).toBe(false);
    expect(access.check(group({ chatId: "-200" })).allow).toBe(false);
  });

  it("requireMention: false answers every message in a listed group", () => {
    const { access } = setup({ telegram: { groups: ["-100"], requireMention: false } });
    expect(access.check(group({ mentionsBot: false })).allow).toBe(true);
  });

  it("Discord groups may name the guild instead of the channel", () => {
    const { access } = setup({ discord: { groups: ["G1"] } });
    expect(access.check(group({ channel: "discord", chatId: "C9", guildId: "G1" })).allow).toBe(true);
    expect(access.check(group({ channel: "discord", chatId: "C9", guildId: "G2" })).allow).toBe(false);
    expect(access.check(group({ channel: "discord", chatId: "C9" })).allow).toBe(false);
  });

  it("open answers any group (mention still required); disabled answers none", () => {
    expect(setup({ slack: { groupPolicy: "open" } }).access.check(group({ channel: "slack" })).allow).toBe(
      true,
    );
    expect(
      setup({ slack: { groupPolicy: "open" } }).access.check(group({ channel: "slack", mentionsBot: false }))
        .allow,
    ).toBe(false);
    expect(
      setup({ slack: { groupPolicy: "disabled", groups: ["-100"] } }).access.check(
        group({ channel: "slack" }),
      ).allow,
    ).toBe(false);
  });

  it("a DM-only allowFrom does not open groups", () => {
    const { access } = setup({ telegram: { allowFrom: ["555"] } });
    expect(access.check(group()).allow).toBe(false);
  });
});

describe("access control: button presses", () => {
  const press = (fields: Record<string, unknown> = {}) => ({
    channel: "telegram",
    chatId: "-100",
    userId: "555",
    userName: "bob",
    isDirect: false,
    buttonId: "approve:1",
    ...fields,
  });

  it("counts a press only from someone allowed to write in that chat", () => {
    const { access } = setup({ telegram: { groups: ["-100"], allowFrom: ["777"] } });
    expect(access.allowsPress(press())).toBe(true);
    expect(access.allowsPress(press({ chatId: "-200" }))).toBe(false);
    expect(access.allowsPress(press({ isDirect: true, chatId: "777", userId: "777" }))).toBe(true);
    expect(access.allowsPress(press({ isDirect: true, chatId: "888", userId: "888" }))).toBe(false);
    expect(access.allowsPress(press({ channel: "console" }))).toBe(true);
  });

  it("never issues a pairing code for a press", () => {
    const { access, pairing } = setup();
    access.allowsPress(press({ isDirect: true, chatId: "888", userId: "888" }));
    expect(pairing.pending()).toEqual([]);
  });
});
