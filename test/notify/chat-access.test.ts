import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { isChatAllowed } from "../../src/notify/chat-access.js";
import type { ToolServices } from "../../src/tools/context.js";

const config = parseConfig(
  { channels: { telegram: { allowFrom: [111], groups: [-1001] }, slack: { groups: ["C42"] } } },
  { env: {}, cwd: tmpdir() },
);
const base = { store: {}, redactor: {} } as unknown as ToolServices;
const here = { channel: "telegram", chatId: "555" };

describe("which chats the message tool may post to", () => {
  it("allows the current chat and configured allowFrom ids and groups", () => {
    expect(isChatAllowed(config, base, here, here)).toBe(true);
    expect(isChatAllowed(config, base, here, { channel: "telegram", chatId: "111" })).toBe(true);
    expect(isChatAllowed(config, base, here, { channel: "telegram", chatId: "-1001" })).toBe(true);
    expect(isChatAllowed(config, base, here, { channel: "slack", chatId: "C42" })).toBe(true);
  });

  it("refuses other chats, the same id on another channel, and unknown channels", () => {
    expect(isChatAllowed(config, base, here, { channel: "telegram", chatId: "999" })).toBe(false);
    expect(isChatAllowed(config, base, here, { channel: "slack", chatId: "-1001" })).toBe(false);
    expect(isChatAllowed(config, base, here, { channel: "irc", chatId: "111" })).toBe(false);
  });

  it("allows DMs of senders approved by pairing", () => {
    const services = {
      ...base,
      pairing: {
        isApproved: (channel: string, userId: string) => channel === "telegram" && userId === "777",
      },
    } as ToolServices;
    expect(isChatAllowed(config, services, here, { channel: "telegram", chatId: "777" })).toBe(true);
    expect(isChatAllowed(config, services, here, { channel: "telegram", chatId: "778" })).toBe(false);
  });
});
