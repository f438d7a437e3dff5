import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeMatrix } from "../fakes/matrix.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { reply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const OWNER = 611;
const MATRIX_OWNER = "@owner:fake.test";
const MATRIX_DM = "!dm:fake.test";
/** Short limits so a test sees a whole incident in seconds; the catalog's own are 45 s. */
const SILENT_AFTER_SECS = 1.5;

interface Readiness {
  ready: boolean;
  down: string[];
  channels: Record<string, { state: string; detail?: string; lastReceiveAt?: number }>;
}

/**
 * Inbound liveness with the real grammY and matrix-js-sdk clients: a fake that keeps the socket open but never
 * answers a receive cycle (the "reports connected but never receives" failure) is detected within the channel's
 * limit, reconnected, named by /readyz, reported to the owner once through ntfy, and after it recovers a message
 * sent there is received and answered.
 */
describe("inbound liveness: a channel that stops receiving", () => {
  let telegram: FakeTelegram;
  let matrix: FakeMatrix;
  let ntfy: NtfyFake;
  let testApp: TestApp;

  const readiness = async (): Promise<{ status: number; body: Readiness }> => {
    const response = await fetch(`${testApp.url}/readyz`);
    return { status: response.status, body: (await response.json()) as Readiness };
  };
  const titled = (title: string) => ntfy.messages.filter((message) => message.title === title);

  beforeAll(async () => {
    [telegram, matrix, ntfy] = await Promise.all([
      new FakeTelegram().start(),
      new FakeMatrix().start(),
      startNtfyFake(),
    ]);
    matrix.addRoom(MATRIX_DM, [MATRIX_OWNER]);
    testApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      config: {
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
            silentAfterSecs: SILENT_AFTER_SECS,
          },
          matrix: {
            homeserverUrl: matrix.homeserverUrl,
            accessToken: matrix.validToken,
            pacing: false,
            allowFrom: [MATRIX_OWNER],
            silentAfterSecs: SILENT_AFTER_SECS,
          },
        },
        notify: { ntfy: { url: ntfy.url, topic: "magpie-owner" } },
      },
    });
    await waitFor(async () => (await readiness()).status === 200, "ready", 10_000);
  }, 30_000);

  afterAll(async () => {
    await testApp?.stop();
    await Promise.all([telegram?.close(), matrix?.close(), ntfy?.close()]);
  });

  it("Telegram: a long poll that hangs is abandoned and polled again, /readyz names it, the owner is told once, and it answers after recovery", async () => {
    const before = telegram.callsOf("getUpdates").length;
    telegram.stallReceives();
    const down = await waitFor(
      async () => {
        const answer = await readiness();
        return answer.status === 503 && answer.body.down.includes("telegram") && answer.body;
      },
      "/readyz naming telegram",
      10_000,
    );
    expect(down.down).toEqual(["telegram"]);
    expect(down.channels.telegram?.state).toBe("reconnecting");
    expect(down.channels.telegram?.detail).toMatch(/no receive cycle for \d+ s \(limit 1\.5 s\)/);
    // The hung poll was abandoned and a new one asked on a fresh connection — twice over the incident, while the
    // owner hears about it once.
    await waitFor(() => titled("Magpie: Telegram is down").length === 1, "the owner told via ntfy", 10_000);
    await waitFor(() => telegram.callsOf("getUpdates").length >= before + 3, "two reconnects", 10_000);
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(titled("Magpie: Telegram is down")[0]?.message).toMatch(/not receiving from Telegram/);
    // Matrix kept receiving: it is not named.
    expect((await readiness()).body.channels.matrix?.state).toBe("connected");

    telegram.resumeReceives();
    await waitFor(async () => (await readiness()).status === 200, "ready again", 10_000);
    await waitFor(() => titled("Magpie: Telegram is back").length === 1, "the back note", 5_000);

    testApp.llm!.script(reply.text("Received after the outage."));
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "still there?" });
    await waitFor(
      () => telegram.sentTexts().includes("Received after the outage."),
      "the answer on Telegram",
      10_000,
    );
    expect(titled("Magpie: Telegram is down")).toHaveLength(1);
    expect(titled("Magpie: Telegram is back")).toHaveLength(1);
  }, 40_000);

  it("Matrix: a /sync that hangs is abandoned and synced again, /readyz names it, the owner is told once, and it answers after recovery", async () => {
    const syncs = () => matrix.calls.filter((call) => call.path === "/sync").length;
    const before = syncs();
    matrix.stallReceives();
    const down = await waitFor(
      async () => {
        const answer = await readiness();
        return answer.status === 503 && answer.body.down.includes("matrix") && answer.body;
      },
      "/readyz naming matrix",
      10_000,
    );
    expect(down.down).toEqual(["matrix"]);
    expect(down.channels.matrix?.detail).toMatch(/no receive cycle/);
    await waitFor(() => titled("Magpie: Matrix is down").length === 1, "the owner told via ntfy", 10_000);
    await waitFor(() => syncs() >= before + 3, "two reconnects", 10_000);
    expect(titled("Magpie: Matrix is down")).toHaveLength(1);

    matrix.resumeReceives();
    await waitFor(async () => (await readiness()).status === 200, "ready again", 10_000);
    await waitFor(() => titled("Magpie: Matrix is back").length === 1, "the back note", 5_000);

    testApp.llm!.script(reply.text("Matrix answer after the outage."));
    matrix.pushText(MATRIX_DM, MATRIX_OWNER, "hello again");
    await waitFor(
      () =>
        matrix
          .sentEvents("m.room.message")
          .some((event) => String(event.content.body).includes("Matrix answer after the outage.")),
      "the answer on Matrix",
      10_000,
    );
    expect(titled("Magpie: Matrix is down")).toHaveLength(1);
  }, 40_000);
});
