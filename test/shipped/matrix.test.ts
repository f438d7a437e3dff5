import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { FakeMatrix, MATRIX_BOT } from "../fakes/matrix.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The Matrix channel through the shipped build (`node dist/bundle/main.js start`, matrix-js-sdk in its lazily
 * loaded chunk) against the Client-Server API fake: the owner's DM is answered, a stranger gets a pairing code and
 * nothing else, an encrypted room gets one notice.
 */

const OWNER = "@alice:fake.test";
const STRANGER = "@mallory:fake.test";
const DM = "!dm:fake.test";

describe("shipped build: Matrix", () => {
  let matrix: FakeMatrix;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    [matrix, llm] = await Promise.all([new FakeMatrix().start(), startOpenAiFake()]);
    matrix.addRoom(DM, [OWNER]);
    matrix.addRoom("!stranger:fake.test", [STRANGER]);
    matrix.addRoom("!secret:fake.test", [OWNER], { encrypted: true });
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: { matrix: { homeserverUrl: matrix.homeserverUrl, allowFrom: [OWNER] } },
      },
      env: { MATRIX_ACCESS_TOKEN: matrix.validToken },
    });
    await waitFor(() => matrix.calls.some((call) => call.path === "/sync"), "the first sync", 20_000);
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([matrix?.close(), llm?.close()]);
  });

  const texts = (roomId: string) =>
    matrix
      .sentEvents("m.room.message")
      .filter((event) => event.room_id === roomId)
      .map((event) => String(event.content.body));

  it("answers the owner's DM in the room, replying to the message", async () => {
    llm.script(reply.text("Hello from Magpie."));
    const asked = matrix.pushText(DM, OWNER, "hi there");
    await waitFor(() => texts(DM).includes("Hello from Magpie."), "the answer", 20_000);
    const answer = matrix
      .sentEvents("m.room.message")
      .find((event) => event.content.body === "Hello from Magpie.");
    expect(answer?.content["m.relates_to"]).toEqual({ "m.in_reply_to": { event_id: asked } });
    llm.assertDone();
  });

  it("gives a stranger a pairing code and nothing else", async () => {
    const llmRequests = llm.requests.length;
    matrix.pushText("!stranger:fake.test", STRANGER, "let me in");
    const [code] = await waitFor(
      () => texts("!stranger:fake.test").length > 0 && texts("!stranger:fake.test"),
      "the pairing reply",
      20_000,
    );
    expect(code).toMatch(/[A-HJ-NP-Z2-9]{8}/);
    expect(llm.requests).toHaveLength(llmRequests);
  });

  it("answers an encrypted room with one notice and nothing else", async () => {
    matrix.push("!secret:fake.test", OWNER, "m.room.encrypted", {
      algorithm: "m.megolm.v1.aes-sha2",
      ciphertext: "x",
    });
    matrix.push("!secret:fake.test", OWNER, "m.room.encrypted", {
      algorithm: "m.megolm.v1.aes-sha2",
      ciphertext: "y",
    });
    await waitFor(() => texts("!secret:fake.test").length > 0, "the notice", 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(texts("!secret:fake.test")).toHaveLength(1);
    expect(texts("!secret:fake.test")[0]).toMatch(/encrypt/i);
    expect(
      matrix
        .sentEvents()
        .filter((event) => event.sender === MATRIX_BOT && event.room_id === "!secret:fake.test"),
    ).toHaveLength(1);
  });

  it("a stranger who invites the bot to 9 encrypted DMs gets one pairing code between them and no notice", async () => {
    const eve = "@eve:fake.test";
    const rooms = Array.from({ length: 9 }, (_, index) => `!eve${index}:fake.test`);
    for (const roomId of rooms) matrix.invite(roomId, eve, { encrypted: true });
    matrix.invite("!eve-group:fake.test", eve, { encrypted: true, direct: false });
    const joined = (roomId: string) => matrix.calls.some((call) => call.path === `/join/${roomId}`);
    await waitFor(() => rooms.every(joined), "the DMs joined (pairing needs them)", 20_000);
    for (const roomId of rooms) {
      matrix.push(roomId, eve, "m.room.encrypted", { algorithm: "m.megolm.v1.aes-sha2", ciphertext: "z" });
    }
    llm.script(reply.text("Marker answered."));
    matrix.pushText(DM, OWNER, "marker");
    await waitFor(() => texts(DM).includes("Marker answered."), "the marker's answer", 20_000);
    const sent = rooms.flatMap(texts);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/[A-HJ-NP-Z2-9]{8}/);
    expect(sent[0]).not.toMatch(/encrypt/i);
    expect(joined("!eve-group:fake.test")).toBe(false);
    llm.assertDone();
  });
});
