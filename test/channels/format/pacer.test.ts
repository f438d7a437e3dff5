import { describe, expect, it } from "vitest";
import { Pacer } from "../../../channels/format/pacer.js";

function virtualTime() {
  let now = 0;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

describe("Pacer", () => {
  it("keeps a group within 20 messages per minute", async () => {
    const time = virtualTime();
    const pacer = new Pacer({ ...time, perChat: () => ({ max: 20, perMs: 60_000 }) });
    const sentAt: number[] = [];
    for (let index = 0; index < 45; index++) {
      await pacer.wait("-100");
      sentAt.push(time.now());
    }
    for (let index = 20; index < sentAt.length; index++)
      expect(sentAt[index]! - sentAt[index - 20]!).toBeGreaterThanOrEqual(60_000);
    expect(sentAt[19]).toBe(0);
    expect(sentAt[20]).toBe(60_000);
  });

  it("keeps all chats together within the overall limit, and chats do not slow each other", async () => {
    const time = virtualTime();
    const pacer = new Pacer({
      ...time,
      overall: { max: 30, perMs: 1000 },
      perChat: () => ({ max: 20, perMs: 60_000 }),
    });
    const sentAt: number[] = [];
    for (let index = 0; index < 60; index++) {
      await pacer.wait(`chat-${index}`);
      sentAt.push(time.now());
    }
    expect(sentAt[29]).toBe(0);
    expect(sentAt[30]).toBe(1000);
    expect(sentAt[59]).toBe(1000);
  });
});
