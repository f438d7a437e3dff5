import { afterEach, describe, expect, it } from "vitest";
import { OutboxWorker } from "../../src/core/outbox-worker.js";
import type { OutboundMessage, ReplyTarget, SendProgress, SendResult } from "../../src/core/types.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { silentLogger } from "../../src/log/logger.js";
import { Store } from "../../src/store/index.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

/**
 * A wait for delivery (a cron report settling, up to 2 minutes) must end when the worker stops: its timer kept the
 * stopped bot alive until the 10 s force-exit made a clean SIGTERM exit 1 (through the CLI:
 * test/shipped/cron-stop.test.ts).
 */
class PlatformDown extends RecordingChannel {
  override async send(
    _target: ReplyTarget,
    _message: OutboundMessage,
    _progress?: SendProgress,
  ): Promise<SendResult> {
    throw new ChannelSendError("Telegram unreachable: socket hang up", { code: "channel.network" });
  }
}

let store: Store | undefined;
afterEach(() => store?.close());

function setUp() {
  store = Store.open(":memory:");
  const worker = new OutboxWorker({
    outbox: store.outbox,
    adapters: new Map([["test", new PlatformDown()]]),
    logger: silentLogger(),
    clock: { now: () => 1_700_000_000_000 },
  });
  const target = { channel: "test", chatId: "chat-1" };
  return { store, worker, target };
}

describe("OutboxWorker.stop and waits for delivery", () => {
  it("ends a wait under way with 'pending' (the item stays queued)", async () => {
    const { store, worker, target } = setUp();
    worker.start();
    const id = store.outbox.enqueue(target, { text: "report" }, { origin: "reply" });
    const waiting = worker.waitForDelivery(id, 120_000);
    await worker.stop();
    expect(await waiting).toBe("pending");
    expect(store.outbox.get(id)!.status).toBe("pending");
  }, 5_000);

  it("answers 'pending' at once for an item queued after the stop, until the next start", async () => {
    const { store, worker, target } = setUp();
    worker.start();
    await worker.stop();
    const id = store.outbox.enqueue(target, { text: "interrupted run's report" }, { origin: "reply" });
    expect(await worker.waitForDelivery(id, 120_000)).toBe("pending");
    worker.start();
    const waiting = worker.waitForDelivery(id, 120_000);
    await worker.stop();
    expect(await waiting).toBe("pending");
  }, 5_000);
});
