import { afterEach, describe, expect, it } from "vitest";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import { magpieEvents } from "../../src/core/events.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { rawPost, respelledHeaders } from "./webhook-replays.js";

/** `POST /hooks/<name>`: signed, fresh, once, small — and only then the trigger's predicate and action. */

const SECRET = "s".repeat(32);
let app: TestApp | null = null;
afterEach(async () => {
  await app?.stop();
  app = null;
});

async function start(trigger: Record<string, unknown> = {}) {
  app = await startTestApp({
    llm: false,
    features: [triggersFeature],
    config: {
      triggers: {
        deploy: {
          on: { webhook: { secret: SECRET } },
          when: "event.payload.action == 'completed'",
          do: { message: "Deploy {{event.payload.repo}}: {{event.payload.action}}" },
          deliver: { channel: "test", chat_id: "owner-chat" },
          ...trigger,
        },
      },
    },
  });
  return app;
}

async function post(
  testApp: TestApp,
  body: string,
  options: { name?: string; secret?: string; timestamp?: number; signature?: string } = {},
) {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature = options.signature ?? signWebhook(options.secret ?? SECRET, timestamp, body);
  const response = await fetch(`${testApp.url}/hooks/${options.name ?? "deploy"}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-magpie-timestamp": String(timestamp),
      "x-magpie-signature": signature,
    },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const sentTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");

describe("webhook triggers", () => {
  it("a signed event whose predicate holds sends the templated message (no LLM); a false one is filtered", async () => {
    const testApp = await start();
    const published: string[] = [];
    const stop = magpieEvents.triggerEvent.subscribe(testApp.app.events.app, (event) =>
      published.push(`${event.trigger}:${event.result}`),
    );
    const fired = await post(testApp, JSON.stringify({ repo: "magpie", action: "completed" }));
    expect(fired).toEqual({ status: 202, body: { result: "fired" } });
    await waitFor(() => sentTexts(testApp).length === 1, "the message");
    expect(sentTexts(testApp)).toEqual(["Deploy magpie: completed"]);
    expect(testApp.channel!.sent[0]?.target.chatId).toBe("owner-chat");
    const filtered = await post(testApp, JSON.stringify({ repo: "magpie", action: "queued" }));
    expect(filtered).toEqual({ status: 202, body: { result: "filtered" } });
    // A payload without the field is an evaluation error: no, counted as an error.
    expect((await post(testApp, "not json")).body).toEqual({ result: "error" });
    const views = testApp.app.context.services.triggers!.list();
    expect(views[0]?.counts).toEqual({ fired: 1, filtered: 1, errors: 1, dropped: 0 });
    expect(sentTexts(testApp)).toHaveLength(1);
    // Each event's result is published for /metrics and the other subscribers.
    expect(published).toEqual(["deploy:fired", "deploy:filtered", "deploy:error"]);
    stop();
  });

  it("attack: a forged signature, a missing one, a replay and a stale timestamp are refused with 401", async () => {
    const testApp = await start();
    const body = JSON.stringify({ repo: "evil", action: "completed" });
    expect((await post(testApp, body, { secret: "x".repeat(32) })).status).toBe(401);
    expect((await post(testApp, body, { signature: "" })).status).toBe(401);
    expect((await post(testApp, body, { signature: "sha256=00" })).status).toBe(401);
    // Signed over another body: the signature covers the body.
    const timestamp = Math.floor(Date.now() / 1000);
    const other = signWebhook(SECRET, timestamp, "{}");
    expect((await post(testApp, body, { timestamp, signature: other })).status).toBe(401);
    // Stale: six minutes old, and six minutes ahead.
    const old = Math.floor(Date.now() / 1000) - 360;
    expect((await post(testApp, body, { timestamp: old })).body).toEqual({ error: "stale timestamp" });
    expect((await post(testApp, body, { timestamp: old + 720 })).status).toBe(401);
    // Replay: the same signed request twice; only the first is accepted.
    const now = Math.floor(Date.now() / 1000);
    const signature = signWebhook(SECRET, now, body);
    expect((await post(testApp, body, { timestamp: now, signature })).status).toBe(202);
    expect(await post(testApp, body, { timestamp: now, signature })).toEqual({
      status: 401,
      body: { error: "signature already used" },
    });
    await waitFor(() => sentTexts(testApp).length === 1, "the one accepted message");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sentTexts(testApp)).toEqual(["Deploy evil: completed"]);
  });

  it("attack: a captured request replayed with its signature re-spelled 11 ways is accepted once and acts once", async () => {
    const testApp = await start();
    const body = JSON.stringify({ repo: "captured", action: "completed" });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(SECRET, timestamp, body);
    const original = await rawPost(
      testApp.url,
      "/hooks/deploy",
      [
        ["X-Magpie-Timestamp", ` ${timestamp}`],
        ["X-Magpie-Signature", ` ${signature}`],
      ],
      body,
    );
    const replays: number[] = [];
    for (const headers of respelledHeaders(timestamp, signature))
      replays.push(await rawPost(testApp.url, "/hooks/deploy", headers, body));
    expect(original).toBe(202);
    expect(replays).toEqual(Array(11).fill(401));
    await testApp.app.context.services.triggers!.loaded()!.engine.idle();
    await waitFor(() => sentTexts(testApp).length === 1, "the one message");
    expect(sentTexts(testApp)).toEqual(["Deploy captured: completed"]);
    expect(testApp.app.context.services.triggers!.list()[0]?.counts.fired).toBe(1);
  });

  it("attack: a body over 1 MB is refused with 413 and never judged", async () => {
    const testApp = await start();
    const big = JSON.stringify({ action: "completed", pad: "a".repeat(1024 * 1024) });
    expect((await post(testApp, big)).status).toBe(413);
    // Without a Content-Length (chunked), the cap holds while reading.
    const timestamp = Math.floor(Date.now() / 1000);
    const chunks = new ReadableStream({
      start(controller) {
        for (let index = 0; index < 20; index++)
          controller.enqueue(new TextEncoder().encode("a".repeat(64 * 1024)));
        controller.close();
      },
    });
    const chunked = await fetch(`${testApp.url}/hooks/deploy`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(SECRET, timestamp, ""),
      },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(testApp.app.context.services.triggers!.list()[0]?.counts.fired).toBe(0);
  });

  it("attack: an unknown name answers 404 exactly like any unknown path (no hint which names exist)", async () => {
    const testApp = await start();
    const unknown = await post(testApp, "{}", { name: "nope" });
    const deployLike = await post(testApp, "{}", { name: "deploy-" });
    const elsewhere = await fetch(`${testApp.url}/nothing-here`, { method: "POST", body: "{}" });
    expect(unknown).toEqual({ status: 404, body: { error: "not found" } });
    expect(deployLike).toEqual(unknown);
    expect({ status: elsewhere.status, body: await elsewhere.json() }).toEqual(unknown);
  });

  it("past maxPerHour a webhook answers 429 and the event is counted as dropped; a cooldown drops too", async () => {
    const testApp = await start({ maxPerHour: 2, when: undefined });
    const statuses: number[] = [];
    for (let index = 0; index < 4; index++)
      statuses.push((await post(testApp, JSON.stringify({ repo: `r${index}`, action: "completed" }))).status);
    expect(statuses).toEqual([202, 202, 429, 429]);
    await waitFor(() => sentTexts(testApp).length === 2, "two messages");
    expect(testApp.app.context.services.triggers!.list()[0]?.counts).toMatchObject({ fired: 2, dropped: 2 });
  });
});
