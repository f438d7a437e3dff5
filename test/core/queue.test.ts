import { afterEach, describe, expect, it, vi } from "vitest";
import { SessionQueues } from "../../src/core/session-queue.js";
import { TurnSlots } from "../../src/core/turn-slots.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { slowToolRuns, testToolNames, testTools } from "../helpers/test-tools.js";

let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

const tick = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms));

describe("session queue", () => {
  it("runs one turn at a time per session, FIFO, collecting messages that arrive while busy", async () => {
    const runs: number[][] = [];
    let release: () => void = () => {};
    const queues = new SessionQueues(
      async (_key, ids) => {
        runs.push(ids);
        if (runs.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
      () => {},
    );
    queues.enqueue("s", 1);
    await tick();
    queues.enqueue("s", 2);
    queues.enqueue("s", 3);
    expect(runs).toEqual([[1]]);
    release();
    await queues.idle();
    expect(runs).toEqual([[1], [2, 3]]);
  });

  it("bounds concurrent turns across sessions with maxConcurrentTurns (the engine's slots)", async () => {
    let active = 0;
    let peak = 0;
    const slots = new TurnSlots(2);
    const queues = new SessionQueues(
      async () => {
        const slot = await slots.acquire();
        active++;
        peak = Math.max(peak, active);
        await tick(30);
        active--;
        slot.release();
      },
      () => {},
    );
    for (let session = 0; session < 6; session++) queues.enqueue(`s${session}`, session);
    await queues.idle();
    expect(peak).toBe(2);
  });

  it("a turn waiting for a person gives its slot back and takes one again when answered", async () => {
    const slots = new TurnSlots(1);
    const paused = await slots.acquire();
    let answer!: () => void;
    const waiting = paused.whileWaiting(
      () => new Promise<string>((resolve) => (answer = () => resolve("yes"))),
    );
    await tick(1);
    expect(slots.pausedCount).toBe(1);
    // Another turn runs while the first waits.
    const other = await slots.acquire();
    expect(slots.running).toBe(1);
    answer();
    await tick(1);
    // The answered turn waits for the slot the other turn holds, then continues with it.
    expect(slots.waiting).toBe(1);
    other.release();
    expect(await waiting).toBe("yes");
    expect(slots.running).toBe(1);
    paused.release();
    expect(slots.running).toBe(0);
  });
});

describe("router queue", () => {
  it("answers in order and folds messages sent during a turn into the next turn", async () => {
    harness = await startTestApp();
    const { llm, channel } = harness;
    llm!.script(
      reply.delay(150, reply.text("first answer")),
      reply.text("second answer", (body) => {
        expect(body.messages.at(-1)).toMatchObject({ role: "user", content: "second\n\nthird" });
      }),
    );
    await channel!.receive("first");
    await tick(30);
    await channel!.receive("second");
    await channel!.receive("third");
    await channel!.waitForSent(2);
    expect(channel!.texts()).toEqual(["first answer", "second answer"]);
    llm!.assertDone();
  });

  it("/stop aborts the running turn (through tools) and replies at once", async () => {
    harness = await startTestApp({
      extraTools: testTools,
      config: { agents: { main: { toolSet: testToolNames } } },
    });
    const { llm, channel, app } = harness;
    llm!.script(reply.toolCalls([{ name: "slow", arguments: { ms: 10_000 } }]));
    const runsBefore = slowToolRuns.started;
    await channel!.receive("do the slow thing");
    // The tool is running (not just the turn: on a loaded machine the model's answer can take longer than 100 ms).
    await vi.waitFor(() => expect(slowToolRuns.started).toBe(runsBefore + 1), { timeout: 10_000 });
    expect(app.router.queues.isBusy("test:chat-1")).toBe(true);
    const started = Date.now();
    await channel!.receive("/stop");
    await channel!.waitForSent(1);
    expect(channel!.texts()).toEqual(["Stopped."]);
    await app.router.queues.idle();
    expect(Date.now() - started).toBeLessThan(2_000);
    const history = app.store.history.load("test:chat-1").map((item) => item.message.content);
    // The stopped call's round stays with its "stopped" result (test/core/stop-history.test.ts).
    expect(history).toEqual([
      "do the slow thing",
      null,
      expect.stringContaining("slow aborted"),
      "(This request was stopped before it finished.)",
    ]);
    const audit = app.store.audit.recent(1)[0]!;
    expect(audit.tool).toBe("slow");
    expect(audit.resultExcerpt).not.toContain("slow done");
    llm!.assertDone();
  });

  it("gives the model nothing after /stop: queued messages are dropped too", async () => {
    harness = await startTestApp();
    const { llm, channel, app } = harness;
    llm!.script(reply.hang());
    await channel!.receive("one");
    // The first turn is at the model (a fixed wait let /stop arrive first on a loaded machine).
    await vi.waitFor(() => expect(llm!.requests).toHaveLength(1), { timeout: 10_000 });
    await channel!.receive("two");
    await channel!.receive("/stop");
    await channel!.waitForSent(1);
    expect(channel!.texts()[0]).toMatch(/^Stopped \(and dropped 1 queued message\)\.$/);
    await app.router.queues.idle();
    llm!.assertDone();
  });
});
