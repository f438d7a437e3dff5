import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import { Store } from "../../src/store/index.js";
import { SeenSignatures } from "../../src/triggers/seen-signatures.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** The used webhook signatures live in SQLite: kept over a restart, pruned once stale, bounded, never unsigned. */

const SECRET = "w".repeat(32);
const MINUTE = 60_000;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-signatures-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function openStore(dir: string): Store {
  const store = Store.open(dir);
  cleanups.push(() => store.close());
  return store;
}

describe("SeenSignatures", () => {
  it("a used MAC stays used after a restart (a new store on the same file), whichever trigger shows it", () => {
    const dir = tempDir();
    const first = openStore(dir);
    const mac = randomBytes(32);
    const now = Date.UTC(2026, 0, 1);
    expect(new SeenSignatures(first.db, 100).claim("deploy", mac, now + 10 * MINUTE, now)).toBe("claimed");
    first.close();
    const seen = new SeenSignatures(openStore(dir).db, 100);
    expect(seen.claim("deploy", mac, now + 10 * MINUTE, now + MINUTE)).toBe("used");
    expect(seen.claim("other", mac, now + 10 * MINUTE, now + MINUTE)).toBe("used");
    expect(seen.size()).toBe(1);
  });

  it("a row holds a hash of the MAC, never the MAC", () => {
    const store = openStore(tempDir());
    const mac = randomBytes(32);
    new SeenSignatures(store.db, 100).claim("deploy", mac, 2_000, 1_000);
    const row = store.db.prepare("SELECT mac_hash, trigger, expires_at FROM webhook_signatures").get();
    expect(row).toEqual({
      mac_hash: createHash("sha256").update(mac).digest(),
      trigger: "deploy",
      expires_at: 2_000,
    });
  });

  it("expired rows are pruned by the next claim: only signatures that could still be fresh are kept", () => {
    const store = openStore(tempDir());
    const seen = new SeenSignatures(store.db, 100);
    const start = Date.UTC(2026, 0, 1);
    const old = Array.from({ length: 50 }, () => randomBytes(32));
    for (const [index, mac] of old.entries())
      expect(seen.claim("deploy", mac, start + 10 * MINUTE + index, start)).toBe("claimed");
    expect(seen.size()).toBe(50);
    // At its expiry a row still counts (the signature may still be fresh to the handler); a moment later it goes.
    expect(seen.claim("deploy", randomBytes(32), start + 20 * MINUTE, start + 10 * MINUTE + 24)).toBe(
      "claimed",
    );
    expect(seen.size()).toBe(50 - 24 + 1);
    expect(seen.claim("deploy", randomBytes(32), start + 30 * MINUTE, start + 15 * MINUTE)).toBe("claimed");
    expect(seen.size()).toBe(2);
  });

  it("never more than `limit` live rows: past it nothing is written, and room comes back as rows expire", () => {
    const store = openStore(tempDir());
    const seen = new SeenSignatures(store.db, 3);
    const start = 1_000_000;
    const taken = Array.from({ length: 3 }, () => randomBytes(32));
    for (const mac of taken) expect(seen.claim("deploy", mac, start + 100, start)).toBe("claimed");
    const refused = randomBytes(32);
    expect(seen.claim("deploy", refused, start + 100, start)).toBe("full");
    // A replay stays a replay when full.
    expect(seen.claim("deploy", taken[0]!, start + 100, start)).toBe("used");
    expect(seen.size()).toBe(3);
    expect(seen.claim("deploy", refused, start + 200, start + 101)).toBe("claimed");
    expect(seen.size()).toBe(1);
  });

  it("a released claim (an event not taken) can be claimed again", () => {
    const seen = new SeenSignatures(openStore(tempDir()).db, 10);
    const mac = randomBytes(32);
    expect(seen.claim("deploy", mac, 2_000, 1_000)).toBe("claimed");
    seen.release(mac);
    expect(seen.size()).toBe(0);
    expect(seen.claim("deploy", mac, 2_000, 1_000)).toBe("claimed");
  });
});

describe("POST /hooks/<name> with the signatures on disk", () => {
  let clock = Date.now();
  const start = async (dataDir?: string, trigger: Record<string, unknown> = {}): Promise<TestApp> => {
    const testApp = await startTestApp({
      llm: false,
      features: [triggersFeature],
      clock: { now: () => clock },
      ...(dataDir ? { dataDir } : {}),
      config: {
        triggers: {
          deploy: {
            on: { webhook: { secret: SECRET } },
            do: { message: "Deploy {{event.payload.repo}}" },
            deliver: { channel: "test", chat_id: "owner-chat" },
            ...trigger,
          },
        },
      },
    });
    return testApp;
  };
  const post = async (testApp: TestApp, body: string, timestamp: number, signature?: string) => {
    const response = await fetch(`${testApp.url}/hooks/deploy`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signature ?? signWebhook(SECRET, timestamp, body),
      },
      body,
    });
    await response.arrayBuffer();
    return response.status;
  };
  const rows = (testApp: TestApp) =>
    Number(testApp.app.context.store.db.prepare("SELECT count(*) FROM webhook_signatures").pluck().get());
  const sentTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");

  it("attack: the identical request after a restart is refused and acts once", async () => {
    clock = Date.now();
    const first = await start();
    const body = JSON.stringify({ repo: "captured" });
    const timestamp = Math.floor(clock / 1000);
    expect(await post(first, body, timestamp)).toBe(202);
    await waitFor(() => sentTexts(first).length === 1, "the message");
    await first.stop({ keepData: true });
    clock += 30_000;
    const second = await start(first.dataDir);
    cleanups.push(() => second.stop());
    expect(await post(second, body, timestamp)).toBe(401);
    expect(second.app.context.services.triggers!.list()[0]?.counts.fired).toBe(0);
  });

  it("attack: a flood of unsigned, forged, stale and dropped requests writes no row", async () => {
    clock = Date.now();
    const testApp = await start(undefined, { maxPerHour: 1 });
    cleanups.push(() => testApp.stop());
    const timestamp = Math.floor(clock / 1000);
    const statuses = new Set<number>();
    for (let index = 0; index < 25; index++) {
      const body = JSON.stringify({ repo: `flood-${index}` });
      statuses.add(await post(testApp, body, timestamp, `sha256=${randomBytes(32).toString("hex")}`));
      statuses.add(await post(testApp, body, timestamp, signWebhook("x".repeat(32), timestamp, body)));
      statuses.add(await post(testApp, body, timestamp - 600));
      statuses.add(await post(testApp, body, timestamp, ""));
    }
    expect([...statuses]).toEqual([401]);
    expect(rows(testApp)).toBe(0);
    // One accepted event takes one row; every later one is past maxPerHour (429) and leaves none.
    expect(await post(testApp, JSON.stringify({ repo: "taken" }), timestamp)).toBe(202);
    for (let index = 0; index < 20; index++)
      expect(await post(testApp, JSON.stringify({ repo: `dropped-${index}` }), timestamp)).toBe(429);
    expect(rows(testApp)).toBe(1);
  });

  it("rows are pruned once their signature is stale: a later request leaves only its own", async () => {
    clock = Date.now();
    const testApp = await start();
    cleanups.push(() => testApp.stop());
    const early = Math.floor(clock / 1000);
    for (let index = 0; index < 5; index++)
      expect(await post(testApp, JSON.stringify({ repo: `early-${index}` }), early)).toBe(202);
    expect(rows(testApp)).toBe(5);
    clock += 11 * MINUTE;
    expect(await post(testApp, JSON.stringify({ repo: "early-0" }), early)).toBe(401);
    expect(await post(testApp, JSON.stringify({ repo: "later" }), Math.floor(clock / 1000))).toBe(202);
    expect(rows(testApp)).toBe(1);
  });
});
