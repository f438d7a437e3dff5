import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { InboundMessage } from "../../src/core/types.js";
import { Authority } from "../../src/security/authority.js";
import { Store } from "../../src/store/index.js";

const config = parseConfig(
  {
    channels: {
      telegram: { allowFrom: [111], groups: [-1001] },
      discord: { allowFrom: ["9001"], groups: ["G1"] },
      slack: { groups: ["C42"] },
    },
  },
  { env: {}, cwd: tmpdir() },
);
const paired = {
  isApproved: (channel: string, userId: string) => channel === "telegram" && userId === "777",
};

function directMessage(channel: string, chatId: string, userId: string): InboundMessage {
  return {
    channel,
    chatId,
    messageId: `${chatId}-${userId}`,
    userId,
    userName: userId,
    text: "hi",
    isDirect: true,
    mentionsBot: false,
    attachments: [],
    receivedAt: 0,
  };
}

describe("Authority: who is an owner, where the bot may post", () => {
  it("owners are allowFrom or paired, per channel; everyone else is a guest", () => {
    const authority = new Authority(config, paired);
    expect(authority.roleOf("telegram", "111")).toBe("owner");
    expect(authority.roleOf("telegram", "777")).toBe("owner");
    expect(authority.roleOf("telegram", "2002")).toBe("guest");
    // The same id on another channel is someone else.
    expect(authority.roleOf("slack", "111")).toBe("guest");
    expect(authority.roleOf("discord", "777")).toBe("guest");
    expect(authority.roleOf("irc", "111")).toBe("guest");
    expect(authority.roleOf("console", "anyone")).toBe("owner");
  });

  it("delivers to the current chat, allowed groups and owners' DMs; refuses strangers and look-alikes", () => {
    const authority = new Authority(config, paired);
    const here = { channel: "telegram", chatId: "555" };
    expect(authority.mayDeliver(here, here)).toBe(true);
    expect(authority.mayDeliver(here, { channel: "telegram", chatId: "-1001" })).toBe(true);
    expect(authority.mayDeliver(here, { channel: "telegram", chatId: "111" })).toBe(true);
    expect(authority.mayDeliver(here, { channel: "telegram", chatId: "777" })).toBe(true);
    expect(authority.mayDeliver(here, { channel: "slack", chatId: "C42" })).toBe(true);
    expect(authority.mayDeliver(here, { channel: "telegram", chatId: "999" })).toBe(false);
    expect(authority.mayDeliver(here, { channel: "slack", chatId: "-1001" })).toBe(false);
    expect(authority.mayDeliver(null, { channel: "telegram", chatId: "555" })).toBe(false);
    expect(authority.mayDeliver(here, { channel: "irc", chatId: "111" })).toBe(false);
  });

  it("a Discord DM channel counts as an owner's only when an owner wrote there (inbox)", () => {
    const store = Store.open(":memory:");
    const authority = new Authority(config, paired, store.db);
    const target = { channel: "discord", chatId: "DM-1" };
    expect(authority.mayDeliver(null, target)).toBe(false);
    store.inbox.insert(directMessage("discord", "DM-2", "4040"), "discord:DM-2");
    expect(authority.mayDeliver(null, { channel: "discord", chatId: "DM-2" })).toBe(false);
    store.inbox.insert(directMessage("discord", "DM-1", "9001"), "discord:DM-1");
    expect(authority.mayDeliver(null, target)).toBe(true);
    store.close();
  });
});
