import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPushoverNotifier, pushoverHttpOptions } from "../../src/notify/pushover.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";

describe("Pushover notifier", () => {
  let fake: PushoverFake;
  beforeEach(async () => {
    fake = await startPushoverFake();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("sends through the HTTP proxy option to api.pushover.net", async () => {
    const notifier = createPushoverNotifier({ token: "app-token", user: "user-key", proxy: fake.proxyUrl });
    expect(notifier.configured).toBe(true);
    const requestId = await notifier.send({
      message: "disk 91% full",
      title: "magpie",
      priority: 1,
      sound: "siren",
    });
    expect(requestId).toMatch(/[0-9a-f-]{36}/);
    expect(fake.notifications).toHaveLength(1);
    const [sent] = fake.notifications;
    expect(sent?.host).toBe("api.pushover.net");
    expect(sent?.path).toBe("/1/messages.json");
    expect(sent?.fields).toMatchObject({
      token: "app-token",
      user: "user-key",
      message: "disk 91% full",
      title: "magpie",
      priority: "1",
      sound: "siren",
    });
  });

  it("adds retry and expire for emergency priority, clamped to Pushover's limits", async () => {
    const notifier = createPushoverNotifier({ token: "t", user: "u", proxy: fake.proxyUrl });
    await notifier.send({ message: "down", priority: 2, retry: 5, expire: 99_999 });
    expect(fake.notifications[0]?.fields).toMatchObject({ priority: "2", retry: "30", expire: "10800" });
  });

  it("reports a rejected token with the fix", async () => {
    fake.failNext(400);
    const notifier = createPushoverNotifier({ token: "t", user: "u", proxy: fake.proxyUrl });
    await expect(notifier.send({ message: "x" })).rejects.toMatchObject({
      code: "pushover.rejected",
      message: expect.stringMatching(/PUSHOVER_TOKEN/),
    });
  });

  it("fails clearly when not configured", async () => {
    const notifier = createPushoverNotifier({ proxy: fake.proxyUrl });
    expect(notifier.configured).toBe(false);
    await expect(notifier.send({ message: "x" })).rejects.toMatchObject({ code: "pushover.not_configured" });
    expect(fake.notifications).toHaveLength(0);
  });

  it("reports an unreachable proxy", async () => {
    const notifier = createPushoverNotifier({ token: "t", user: "u", proxy: "http://127.0.0.1:1" });
    await expect(notifier.send({ message: "x" })).rejects.toMatchObject({ code: "pushover.unreachable" });
  });

  it("needs hostname and port next to proxy (the library only swaps host)", () => {
    expect(pushoverHttpOptions("http://127.0.0.1:8080")).toEqual({
      proxy: "http://127.0.0.1:8080",
      hostname: "127.0.0.1",
      port: 8080,
    });
    expect(() => pushoverHttpOptions("socks5://127.0.0.1:1080")).toThrow(/http:\/\/host:port/);
  });
});
