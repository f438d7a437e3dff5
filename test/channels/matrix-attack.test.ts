import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { MatrixChannel } from "../../channels/matrix.js";
import { accessFeature } from "../../src/app/access-feature.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeMatrix, MATRIX_BOT } from "../fakes/matrix.js";
import { reply } from "../fakes/openai.js";
import { startTestApp } from "../helpers/harness.js";
import { hostileInputs, LINEAR_BOUND_MS, MB } from "../helpers/hostile-inputs.js";
import { channelDeps, RecordingSink } from "./helpers.js";

const OWNER = "@alice:fake.test";
const STRANGER = "@mallory:fake.test";
const OWNER_DM = "!dm:fake.test";
const CODE = /[A-HJ-NP-Z2-9]{8}/;

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

/** The whole app (real access control, inbox, router, outbox) on the Matrix fake, the owner in allowFrom. */
async function matrixApp(access: Record<string, unknown>) {
  const fake = await new FakeMatrix().start();
  cleanup.push(() => fake.close());
  fake.addRoom(OWNER_DM, [OWNER]);
  const testApp = await startTestApp({
    features: [accessFeature],
    loadChannels: true,
    channel: null,
    config: {
      channels: {
        matrix: {
          homeserverUrl: fake.homeserverUrl,
          accessToken: fake.validToken,
          allowFrom: [OWNER],
          pacing: false,
          ...access,
        },
      },
    },
  });
  cleanup.push(() => testApp.stop());
  await waitFor(() => fake.calls.some((call) => call.path === "/sync"), "the first sync", 20_000);
  return { fake, testApp, llm: testApp.llm! };
}

const botEventsIn = (fake: FakeMatrix, roomIds: string[]) =>
  fake.sentEvents().filter((event) => roomIds.includes(event.room_id));
const joined = (fake: FakeMatrix, roomId: string) =>
  fake.calls.some((call) => call.method === "POST" && call.path === `/join/${roomId}`);
const encrypted = (fake: FakeMatrix, roomId: string, sender: string) =>
  fake.push(roomId, sender, "m.room.encrypted", { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "opaque" });

/**
 * DESIGN.md → Channels → Access control: "a stranger gets nothing beyond pairing", whatever the room. The
 * sender is judged before the bot joins a room or reads an event.
 */
describe("matrix: strangers are judged before anything else", () => {
  it("under an allowlist, a stranger's 9 encrypted rooms get nothing — not even a join; the owner's gets its one notice", async () => {
    const { fake, llm } = await matrixApp({ dmPolicy: "allowlist" });
    const strangerRooms = Array.from({ length: 9 }, (_, index) => `!enc${index}:fake.test`);
    for (const roomId of strangerRooms) fake.invite(roomId, STRANGER, { encrypted: true });
    fake.invite("!owner-secret:fake.test", OWNER, { encrypted: true });
    await waitFor(() => joined(fake, "!owner-secret:fake.test"), "the owner's room joined", 20_000);
    // As if the bot had joined them all: a stranger's encrypted messages in every room, then the owner's.
    for (const roomId of strangerRooms) {
      fake.rooms.get(roomId)!.invitedBot = false;
      fake.rooms.get(roomId)!.members.push(MATRIX_BOT);
      encrypted(fake, roomId, STRANGER);
    }
    encrypted(fake, "!owner-secret:fake.test", OWNER);
    llm.script(reply.text("still here"));
    fake.pushText(OWNER_DM, OWNER, "marker");
    await waitFor(
      () => fake.sentEvents("m.room.message").some((event) => event.content.body === "still here"),
      "the owner's answer",
      20_000,
    );
    expect(strangerRooms.filter((roomId) => joined(fake, roomId))).toEqual([]);
    expect(botEventsIn(fake, strangerRooms)).toEqual([]);
    const notices = botEventsIn(fake, ["!owner-secret:fake.test"]);
    expect(notices).toHaveLength(1);
    expect(String(notices[0]!.content.body)).toMatch(/encrypt/i);
    llm.assertDone();
  });

  it("under pairing, a stranger's 9 encrypted DMs get one pairing code between them and no encryption notice", async () => {
    const { fake, llm } = await matrixApp({});
    const strangerRooms = Array.from({ length: 9 }, (_, index) => `!dm${index}:fake.test`);
    for (const roomId of strangerRooms) fake.invite(roomId, STRANGER, { encrypted: true });
    // A group invite from a stranger is not joined: groups are allowlisted.
    fake.invite("!group:fake.test", STRANGER, { encrypted: true, direct: false });
    await waitFor(() => strangerRooms.every((roomId) => joined(fake, roomId)), "the DMs joined", 20_000);
    for (const roomId of strangerRooms) encrypted(fake, roomId, STRANGER);
    llm.script(reply.text("still here"));
    fake.pushText(OWNER_DM, OWNER, "marker");
    await waitFor(
      () => fake.sentEvents("m.room.message").some((event) => event.content.body === "still here"),
      "the owner's answer",
      20_000,
    );
    const sent = botEventsIn(fake, strangerRooms);
    expect(sent).toHaveLength(1);
    expect(String(sent[0]!.content.body)).toMatch(CODE);
    expect(String(sent[0]!.content.body)).not.toMatch(/encrypt/i);
    expect(joined(fake, "!group:fake.test")).toBe(false);
    llm.assertDone();
  });

  it("a stranger's reply reads nothing: the replied-to event is not fetched, the body not read", async () => {
    const { fake, llm } = await matrixApp({ dmPolicy: "allowlist" });
    fake.addRoom("!mallory:fake.test", [STRANGER]);
    const earlier = fake.pushText("!mallory:fake.test", STRANGER, "earlier");
    fake.pushText("!mallory:fake.test", STRANGER, `> <${STRANGER}> earlier\n\n${"x".repeat(MB)}`, {
      "m.relates_to": { "m.in_reply_to": { event_id: earlier } },
    });
    llm.script(reply.text("still here"));
    fake.pushText(OWNER_DM, OWNER, "marker");
    await waitFor(
      () => fake.sentEvents("m.room.message").some((event) => event.content.body === "still here"),
      "the owner's answer",
      20_000,
    );
    expect(fake.calls.filter((call) => call.path.includes("/event/"))).toEqual([]);
    expect(botEventsIn(fake, ["!mallory:fake.test"])).toEqual([]);
    llm.assertDone();
  });
});

/** Every 1 MB hostile input (test/helpers/hostile-inputs.ts) as a Matrix message's body and formatted body. */
describe("matrix: 1 MB hostile inputs", () => {
  it("each is handled in linear time without holding the event loop", async () => {
    const fake = await new FakeMatrix().start();
    cleanup.push(() => fake.close());
    fake.addRoom(OWNER_DM, [OWNER]);
    const adapter = new MatrixChannel(
      channelDeps({ matrix: { homeserverUrl: fake.homeserverUrl, accessToken: fake.validToken } }),
    );
    cleanup.push(() => adapter.stop());
    const sink = new RecordingSink();
    await adapter.start(sink);
    await waitFor(() => adapter.status().state === "connected", "connected");
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    let slowest = 0;
    for (const [name, input] of Object.entries(hostileInputs(MB))) {
      const before = sink.messages.length;
      const started = performance.now();
      fake.pushText(OWNER_DM, OWNER, input, {
        format: "org.matrix.custom.html",
        formatted_body: input,
        "m.mentions": { user_ids: [MATRIX_BOT] },
      });
      const inbound = await waitFor(() => sink.messages[before], name, 20_000);
      slowest = Math.max(slowest, performance.now() - started);
      expect(inbound.text.length, name).toBeGreaterThan(0);
      expect(inbound.mentionsBot, name).toBe(true);
    }
    loop.disable();
    console.log(
      `matrix hostile inputs: slowest ${Math.round(slowest)} ms, longest stall ${Math.round(loop.max / 1e6)} ms`,
    );
    expect(slowest).toBeLessThan(LINEAR_BOUND_MS);
    expect(loop.max / 1e6).toBeLessThan(LINEAR_BOUND_MS);
  }, 60_000);
});
