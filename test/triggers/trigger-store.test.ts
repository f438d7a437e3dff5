import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** Triggers made in chat are kept across restarts; a damaged stored row is never taken for a trigger. */

const SECRET = "p".repeat(32);
let app: TestApp | null = null;
afterEach(async () => {
  await app?.stop();
  app = null;
});

const owner = {
  creator: {
    identity: { channel: "test", userId: "owner", role: "owner" as const },
    toolNames: ["trigger_add"],
  },
  createdFrom: { channel: "test", chatId: "owner-chat" },
};

describe("chat triggers in the store", () => {
  it("survive a restart and keep working; a damaged row is ignored", async () => {
    const config = { notify: { ntfy: { url: "http://127.0.0.1:9", topic: "magpie-test" } } };
    const first = await startTestApp({ llm: false, features: [triggersFeature], config });
    await first.app.context.services.triggers!.add(
      {
        name: "bell",
        on: { webhook: { secret: SECRET } },
        do: { message: "ding {{event.payload.n}}" },
        cooldownSecs: 0,
        maxPerHour: 60,
        enabled: true,
      },
      owner,
    );
    await first.app.context.services.triggers!.add(
      {
        name: "phone",
        on: { cron: "0 0 1 1 *" },
        do: { message: "new year" },
        deliver: { pushover: false, ntfy: true },
        cooldownSecs: 0,
        maxPerHour: 60,
        enabled: true,
      },
      owner,
    );
    const rows = first.app.store.kv.get("triggers.chat", z.array(z.unknown())) ?? [];
    // A row edited by hand without a creator or an action: no trigger at all, so no hook answers for it.
    first.app.store.kv.set("triggers.chat", [
      ...rows,
      { name: "forged", on: { webhook: { secret: SECRET } } },
    ]);
    await first.stop({ keepData: true });

    app = await startTestApp({ llm: false, features: [triggersFeature], dataDir: first.dataDir, config });
    const testApp = app;
    const views = testApp.app.context.services.triggers!.list();
    expect(views.map((view) => [view.name, view.deliver])).toEqual([
      ["bell", "test:owner-chat"],
      ["phone", "ntfy"],
    ]);
    const body = JSON.stringify({ n: 3 });
    const post = (name: string) => {
      const timestamp = Math.floor(Date.now() / 1000);
      return fetch(`${testApp.url}/hooks/${name}`, {
        method: "POST",
        headers: {
          "x-magpie-timestamp": String(timestamp),
          "x-magpie-signature": signWebhook(SECRET, timestamp, `${body}${name}`),
        },
        body: `${body}${name}`,
      });
    };
    expect((await post("forged")).status).toBe(404);
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${testApp.url}/hooks/bell`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(SECRET, timestamp, body),
      },
      body,
    });
    expect(response.status).toBe(202);
    await waitFor(() => testApp.channel!.sent.some((sent) => sent.message.text === "ding 3"), "the message");
    expect(testApp.channel!.sent[0]?.target.chatId).toBe("owner-chat");
    expect(await testApp.app.context.services.triggers!.remove("bell", owner.creator.identity)).toBe(true);
    expect(testApp.app.context.services.triggers!.list().map((view) => view.name)).toEqual(["phone"]);
  });
});
