import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { createNtfyNotifier } from "../../src/notify/ntfy.js";
import { createPhoneNotifier } from "../../src/notify/phone.js";
import type { ToolContext } from "../../src/tools/context.js";
import { notifyTool } from "../../src/tools/notify.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";

describe("ntfy notifier", () => {
  let fake: NtfyFake;
  beforeEach(async () => {
    fake = await startNtfyFake({ token: "tk_owner" });
  });
  afterEach(async () => {
    await fake.close();
  });

  it("publishes to the configured server and topic with title, priority and the token", async () => {
    const notifier = createNtfyNotifier({ url: fake.url, topic: "magpie-alerts", token: "tk_owner" });
    expect(notifier.configured).toBe(true);
    const id = await notifier.send({ message: "disk 91% full", title: "Magpie: disk", priority: 1 });
    expect(id).toBe(fake.messages[0]?.id);
    expect(fake.messages[0]).toMatchObject({
      topic: "magpie-alerts",
      message: "disk 91% full",
      title: "Magpie: disk",
      priority: 4,
      authorization: "Bearer tk_owner",
    });
    await notifier.send({ message: "quiet", priority: -2 });
    await notifier.send({ message: "wake up", priority: 2 });
    expect(fake.messages.map((message) => message.priority)).toEqual([4, 1, 5]);
  });

  it("names the token setting when the server refuses, and says what to set when unconfigured", async () => {
    const wrong = createNtfyNotifier({ url: fake.url, topic: "magpie-alerts", token: "tk_wrong" });
    await expect(wrong.send({ message: "x" })).rejects.toMatchObject({
      code: "ntfy.refused",
      message: expect.stringMatching(/HTTP 403.*NTFY_TOKEN/),
    });
    const none = createNtfyNotifier({});
    expect(none.configured).toBe(false);
    await expect(none.send({ message: "x" })).rejects.toMatchObject({
      code: "ntfy.not_configured",
      message: expect.stringMatching(/NTFY_URL/),
    });
  });

  it("keeps a 1 MB one-word message and a hostile title within bounds", async () => {
    const notifier = createNtfyNotifier({ url: fake.url, topic: "t", token: "tk_owner" });
    await notifier.send({ message: "x".repeat(1024 * 1024), title: "y".repeat(100_000) });
    expect(fake.messages[0]?.message.length).toBeLessThanOrEqual(4000);
    expect(fake.messages[0]?.title?.length).toBeLessThanOrEqual(250);
  });

  // Attack: the configured server answers with a redirect to another host. Following it would hand that host the
  // message (a 307 re-POSTs the body) and, with an older fetch, the token. The notifier refuses redirects.
  it("never follows a redirect away from the configured server", async () => {
    const elsewhere = await startNtfyFake();
    const redirector = http.createServer((_request, response) => {
      response.writeHead(307, { location: `${elsewhere.url}/` });
      response.end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
      const notifier = createNtfyNotifier({ url, topic: "owner-topic", token: "tk_owner" });
      await expect(notifier.send({ message: "secret alert" })).rejects.toMatchObject({
        code: "ntfy.unreachable",
      });
      expect(elsewhere.requests).toEqual([]);
    } finally {
      redirector.closeAllConnections();
      await new Promise<void>((resolve) => redirector.close(() => resolve()));
      await elsewhere.close();
    }
  });
});

describe("phone notifications (every configured provider)", () => {
  let ntfy: NtfyFake;
  let pushover: PushoverFake;
  beforeEach(async () => {
    ntfy = await startNtfyFake();
    pushover = await startPushoverFake();
  });
  afterEach(async () => {
    await ntfy.close();
    await pushover.close();
  });

  const bothConfigured = () =>
    parseConfig({
      notify: {
        pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl },
        ntfy: { url: ntfy.url, topic: "magpie" },
      },
    }).notify;

  it("sends an owner alert to Pushover and ntfy; `only` narrows it to one", async () => {
    const notifier = createPhoneNotifier(bothConfigured());
    expect(notifier.configured).toBe(true);
    const ids = await notifier.send({ title: "Magpie: budget", message: "daily cap reached", priority: 1 });
    expect(ids).toMatch(/^pushover:.+, ntfy:.+$/);
    expect(pushover.notifications[0]?.fields).toMatchObject({ message: "daily cap reached", priority: "1" });
    expect(ntfy.messages[0]).toMatchObject({
      title: "Magpie: budget",
      message: "daily cap reached",
      priority: 4,
    });

    await notifier.send({ message: "only the phone app" }, ["ntfy"]);
    expect(ntfy.messages).toHaveLength(2);
    expect(pushover.notifications).toHaveLength(1);
  });

  it("one provider failing doesn't lose the alert; all failing rejects with the first error", async () => {
    pushover.failNext(500, 10);
    const notifier = createPhoneNotifier(bothConfigured());
    await expect(notifier.send({ message: "still arrives" })).resolves.toMatch(/^ntfy:/);
    expect(ntfy.messages).toHaveLength(1);
    await ntfy.close();
    await expect(notifier.send({ message: "nowhere" })).rejects.toMatchObject({
      code: expect.stringMatching(/^pushover\./),
    });
  });

  it("without any provider: not configured, and a send says what to set", async () => {
    const notifier = createPhoneNotifier(parseConfig({}).notify);
    expect(notifier.configured).toBe(false);
    await expect(notifier.send({ message: "x" })).rejects.toMatchObject({ code: "notify.not_configured" });
    // Asked for by name, the provider's own error names its settings.
    await expect(notifier.send({ message: "x" }, ["ntfy"])).rejects.toMatchObject({
      code: "ntfy.not_configured",
    });
  });

  it("the notify tool maps low … urgent onto each provider", async () => {
    const config = parseConfig({
      notify: {
        pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl },
        ntfy: { url: ntfy.url, topic: "magpie" },
      },
    });
    const context = { config, services: {} } as unknown as ToolContext;
    const result = await notifyTool.execute(
      { message: "server down", title: "Ops", priority: "urgent" },
      context,
    );
    expect(result).toMatchObject({ ok: true, sent: true });
    expect(ntfy.messages[0]).toMatchObject({ message: "server down", title: "Ops", priority: 5 });
    expect(pushover.notifications[0]?.fields).toMatchObject({ priority: "2", retry: "60", expire: "3600" });
    await notifyTool.execute({ message: "fyi", priority: "low" }, context);
    expect(ntfy.messages[1]?.priority).toBe(2);
    expect(pushover.notifications[1]?.fields.priority).toBe("-1");
  });
});
