import { afterEach, describe, expect, it } from "vitest";
import { OutboxWorker } from "../../src/core/outbox-worker.js";
import type { OutboundMessage, ReplyTarget, SendProgress, SendResult } from "../../src/core/types.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

/**
 * A platform outage (every send fails with a network error) on a clock the test moves: the outbox keeps a reply
 * queued before the outage and delivers it once when the outage ends — a 10-minute outage used to exhaust its ten
 * attempts at 511 s and lose it. (Through the built CLI with the Telegram fake: test/soak/outage-soak.test.ts.)
 */
class PlatformDown extends RecordingChannel {
  down = true;
  override async send(
    target: ReplyTarget,
    message: OutboundMessage,
    progress?: SendProgress,
  ): Promise<SendResult> {
    if (this.down)
      throw new ChannelSendError("Telegram unreachable: socket hang up", { code: "channel.network" });
    return super.send(target, message, progress);
  }
}

let store: Store | undefined;
let worker: OutboxWorker | undefined;
afterEach(async () => {
  await worker?.stop();
  store?.close();
});

function setUp() {
  store = Store.open(":memory:");
  const channel = new PlatformDown();
  let now = 1_700_000_000_000;
  const clock = { now: () => now };
  worker = new OutboxWorker({
    outbox: store.outbox,
    adapters: new Map([["test", channel]]),
    logger: silentLogger(),
    clock,
    inbox: store.inbox,
  });
  worker.start();
  const target = { channel: "test", chatId: "chat-1" };
  /** Moves the clock to each next try until `untilMs` has passed, running the tries. */
  const runFor = async (ms: number) => {
    const end = now + ms;
    for (;;) {
      const due = store!.outbox.nextDueAt();
      if (due === null || due > end) break;
      now = Math.max(now, due);
      await worker!.flush(1_000);
    }
    now = end;
  };
  return { store, channel, target, runFor, started: now, at: () => now };
}

describe("the outbox during a platform outage", () => {
  it("a reply queued before a 10-minute outage is delivered once, then a later one, in order", async () => {
    const { store, channel, target, runFor, at } = setUp();
    const older = store.outbox.enqueue(target, { text: "older reply" }, { origin: "reply", at: at() });
    await worker!.flush(1_000);
    await runFor(5 * 60_000);
    const newer = store.outbox.enqueue(target, { text: "newer reply" }, { origin: "reply", at: at() });
    await runFor(5 * 60_000 + 1_000);
    expect(store.outbox.get(older)!.status).toBe("pending");
    expect(store.outbox.get(older)!.attempts).toBeGreaterThanOrEqual(10);
    expect(channel.sent).toHaveLength(0);

    channel.down = false;
    // Within a minute of the end (the longest back-off), both go out, oldest first.
    await runFor(60_000);
    expect(channel.texts()).toEqual(["older reply", "newer reply"]);
    expect(store.outbox.get(older)!.status).toBe("sent");
    expect(store.outbox.get(newer)!.status).toBe("sent");
  });

  it("a reply still failing after an hour ends failed (undeliverable), not retried for ever", async () => {
    const { store, channel, target, runFor, at } = setUp();
    const id = store.outbox.enqueue(target, { text: "never" }, { origin: "reply", at: at() });
    await worker!.flush(1_000);
    await runFor(59 * 60_000);
    expect(store.outbox.get(id)!.status).toBe("pending");
    await runFor(2 * 60_000);
    expect(store.outbox.get(id)!.status).toBe("failed");
    expect(channel.sent).toHaveLength(0);
  });

  it("a permanent refusal still fails at once", async () => {
    const { store, channel, target, at } = setUp();
    channel.down = false;
    channel.failNext(new ChannelSendError("Forbidden: bot was blocked by the user", { permanent: true }));
    const id = store.outbox.enqueue(target, { text: "blocked" }, { origin: "reply", at: at() });
    await worker!.flush(1_000);
    expect(store.outbox.get(id)).toMatchObject({ status: "failed", attempts: 1 });
  });
});
