import { afterEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/schema.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTelegramApp, type TelegramApp } from "../helpers/telegram-app.js";
import { testTools } from "../helpers/test-tools.js";

/**
 * What a cap covers is what a user means by it (DESIGN.md → Models, failover and spend → Budgets): `perTurn` is
 * everything one message causes — nested delegations, the subagents it spawns and the follow-up turns their
 * results start — and `perJobRun` everything one job run causes. No path opens a fresh budget: each attack here
 * makes more LLM calls than the cap allows when a delegation, a spawn, a follow-up or a restart starts over.
 * The OpenAI fake answers every call with 10 prompt + 10 completion tokens: 20 tokens a call.
 */

const OWNER = { id: 777, first_name: "Alice" };
const DM = { id: 777, type: "private" as const };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

interface Started {
  app: TelegramApp;
  llm: OpenAiFake;
  telegram: FakeTelegram;
  texts(): string[];
  say(text: string): void;
}

async function start(
  config: ConfigInput,
  reuse?: { telegram: FakeTelegram; llm: OpenAiFake; dataDir: string },
): Promise<Started> {
  const telegram = reuse?.telegram ?? (await new FakeTelegram().start());
  const llm = reuse?.llm ?? (await startOpenAiFake());
  if (!reuse) {
    cleanup.push(() => telegram.close());
    cleanup.push(() => llm.close());
  }
  const app = await startTelegramApp({
    telegram,
    access: { allowFrom: [OWNER.id] },
    // One turn at a time: a subagent waits for the slot its parent holds, so the script's order is fixed.
    config: { ...config, agent: { maxConcurrentTurns: 1, ...config.agent } } as ConfigInput,
    app: { llm, extraTools: testTools, ...(reuse ? { dataDir: reuse.dataDir } : {}) },
  });
  cleanup.push(() => app.stop());
  const texts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(DM.id))
      .map((call) => String(call.body.text));
  const say = (text: string) => telegram.pushMessage({ chat: DM, from: OWNER, text });
  return { app, llm, telegram, texts, say };
}

const waitForText = (started: Started, pattern: RegExp, what: string) =>
  waitFor(() => started.texts().find((text) => pattern.test(text)), what);

interface LedgerRow {
  origin: string;
  session_key: string;
  turn_id: string;
  job_id: number | null;
  run_id: number | null;
}

function ledger(app: TelegramApp): LedgerRow[] {
  return app.testApp.app.store.db
    .prepare("SELECT origin, session_key, turn_id, job_id, run_id FROM llm_usage ORDER BY id")
    .all() as LedgerRow[];
}

describe("budgets cover everything a message or a job run causes", () => {
  it("perTurn: nested delegations spend from the message's turn, not a fresh budget each", async () => {
    const started = await start({
      budgets: { perTurn: { tokens: 50 } },
      agents: {
        main: { toolSet: ["delegate", "add_numbers"] },
        helper: { toolSet: ["delegate", "add_numbers"] },
      },
    });
    const { llm } = started;
    llm.script(
      reply.toolCalls([{ name: "delegate", arguments: { agent: "helper", prompt: "go" } }]),
      reply.toolCalls([{ name: "delegate", arguments: { agent: "helper", prompt: "deeper" } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 2 } }]),
      // With a fresh budget per delegation, each of these would be made too.
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 3, b: 4 } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 5, b: 6 } }]),
      reply.text("helper done"),
      reply.text("helper done"),
      reply.text("main done"),
    );
    started.say("work it out");
    const refused = await waitForText(started, /Budget reached/, "the budget message");
    // 0, 20 and 40 tokens are under the cap of 50: three calls for the whole message, then nothing.
    expect(refused).toContain("budgets.perTurn.tokens is 50 tokens per turn");
    expect(refused).toContain("60 tokens have been used in this turn");
    expect(llm.requests).toHaveLength(3);
    const rows = ledger(started.app);
    expect(rows.map((row) => row.origin)).toEqual(["user", "delegate", "delegate"]);
    expect(new Set(rows.map((row) => row.turn_id)).size).toBe(1);
    expect(new Set(rows.map((row) => row.session_key))).toEqual(new Set(["telegram:777"]));
    expect(started.texts()).toHaveLength(1);
  });

  it("perTurn: a spawned subagent and the follow-up turn its result starts spend from the turn that spawned it", async () => {
    const started = await start({ budgets: { perTurn: { tokens: 50 } } });
    const { llm } = started;
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Look around.", label: "look" } }]),
      reply.text("Started it."),
      reply.text("Found three things."),
    );
    started.say("look around in the background");
    await waitForText(started, /^Background task .* finished: Found three things\.$/, "the task's result");
    // The follow-up turn starts at 60 tokens of the spawning turn's 50: it makes no call.
    const refused = await waitForText(started, /Budget reached/, "the follow-up's budget message");
    expect(refused).toContain("budgets.perTurn.tokens is 50 tokens per turn");
    expect(refused).toContain("60 tokens have been used in this turn");
    expect(llm.requests).toHaveLength(3);
    const rows = ledger(started.app);
    expect(rows.map((row) => row.origin)).toEqual(["user", "user", "spawn"]);
    expect(new Set(rows.map((row) => row.turn_id)).size).toBe(1);
    // perChat: the subagent's calls are the chat's.
    expect(new Set(rows.map((row) => row.session_key))).toEqual(new Set(["telegram:777"]));
    llm.assertDone();
  });

  it("perJobRun: the follow-up turn a job's subagent starts in the delivery chat spends from the run", async () => {
    const started = await start({
      budgets: { perJobRun: { tokens: 50 } },
      cron: {
        jobs: [
          {
            name: "scout",
            expression: "0 3 1 1 *",
            prompt: "Have a look around.",
            toolSet: ["spawn"],
            deliver: { channel: "telegram", chatId: String(OWNER.id) },
          },
        ],
      },
    });
    const { llm, app } = started;
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Look around.", label: "look" } }]),
      reply.text("Spawned a scout."),
      reply.text("Found three things."),
    );
    const scheduler = app.testApp.app.context.services.scheduler as Scheduler;
    const job = scheduler.list().find((entry) => entry.name === "scout")!;
    const run = await scheduler.runNow(job.id);
    expect(run.output).toBe("Spawned a scout.");
    await waitForText(started, /^Background task .* finished: Found three things\.$/, "the task's result");
    const refused = await waitForText(started, /Budget reached/, "the follow-up's budget message");
    expect(refused).toContain("budgets.perJobRun.tokens is 50 tokens per job run");
    expect(llm.requests).toHaveLength(3);
    // Every call is the run's, the subagent's and the follow-up's alike.
    expect(ledger(app).map((row) => [row.origin, row.job_id, row.run_id])).toEqual([
      ["schedule", job.id, run.id],
      ["schedule", job.id, run.id],
      ["spawn", job.id, run.id],
    ]);
    llm.assertDone();
  });

  it("perTurn and daily hold across a restart: a turn run again after it continues its spending", async () => {
    const config: ConfigInput = {
      budgets: { perTurn: { tokens: 50 }, daily: { tokens: 200 } },
      agents: { main: { toolSet: ["add_numbers"] } },
    };
    const first = await start(config);
    const { llm, telegram } = first;
    llm.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 1 } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 2 } }]),
      reply.hang(),
    );
    first.say("add a lot");
    await waitFor(() => llm.requests.length === 3, "the third call");
    const dataDir = first.app.testApp.dataDir;
    // Stopped mid-turn: the message goes back to pending and is answered after the restart.
    await first.app.stop({ keepData: true, keepLlm: true });
    cleanup.push(async () => {
      const { rmSync } = await import("node:fs");
      rmSync(dataDir, { recursive: true, force: true });
    });
    expect(first.texts()).toHaveLength(0);

    llm.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 3, b: 3 } }]),
      // A fresh perTurn budget after the restart would make these too.
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 4, b: 4 } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 5, b: 5 } }]),
      reply.text("all added"),
    );
    const second = await start(config, { telegram, llm, dataDir });
    const refused = await waitForText(second, /Budget reached/, "the re-run's budget message");
    // 40 tokens before the restart, one call at 40 after it, then the cap.
    expect(refused).toContain("budgets.perTurn.tokens is 50 tokens per turn");
    expect(refused).toContain("60 tokens have been used in this turn");
    expect(llm.requests).toHaveLength(4);

    // daily: the ledger is the source — 60 tokens today after the restart, so a cap of 60 is reached.
    await second.app.stop({ keepData: true, keepLlm: true });
    const third = await start({ ...config, budgets: { daily: { tokens: 60 } } }, { telegram, llm, dataDir });
    const before = third.texts().length;
    third.say("one more");
    await waitFor(() => third.texts().length > before, "the reply");
    expect(third.texts()[before]).toContain("budgets.daily.tokens is 60 tokens a day");
    expect(llm.requests).toHaveLength(4);
  });
  it("history compaction is a call of the turn that made the history long: checked and recorded under its budgets", async () => {
    // historyTokens 10: every turn's history is long enough to be summarized after it.
    const capped = await start({ budgets: { perTurn: { tokens: 20 } }, agent: { historyTokens: 10 } });
    capped.llm.script(reply.text("one"), reply.text("two"));
    capped.say("first");
    await waitForText(capped, /^one$/, "the first reply");
    // The session's queue runs the next turn only after the first one's compaction: it was not made.
    capped.say("second");
    await waitForText(capped, /^two$/, "the second reply");
    expect(capped.llm.requests).toHaveLength(2);
    expect(capped.llm.requests.map((body) => body.messages[0]?.content)).not.toContainEqual(
      expect.stringContaining("Summarize the conversation"),
    );
    capped.llm.assertDone();
  });

  it("a compaction under the cap is in the ledger, on the turn's own row set", async () => {
    const started = await start({ budgets: { perTurn: { tokens: 100 } }, agent: { historyTokens: 10 } });
    started.llm.script(reply.text("one"), reply.text("A short summary."));
    started.say("first");
    await waitForText(started, /^one$/, "the reply");
    await waitFor(() => ledger(started.app).length === 2, "the compaction's ledger row");
    const rows = ledger(started.app);
    expect(rows[0]!.turn_id).toBe(rows[1]!.turn_id);
    expect(started.llm.requests[1]!.messages[0]!.content).toContain("Summarize the conversation");
    started.llm.assertDone();
  });
  it("a voice note's transcription is a call of the message's turn: counted in perTurn, refused at a cap", async () => {
    const started = await start({
      llm: { transcriptionModel: "whisper-test" },
      budgets: { perTurn: { tokens: 20 } },
    });
    const { llm, telegram } = started;
    const audio = Buffer.from("OggS fake opus bytes");
    telegram.files.set("VOICE1", { path: "voice/v1.oga", content: audio });
    // 120 characters: an estimated 30 tokens, past the message's cap of 20 before the model is asked.
    llm.transcript = "x".repeat(120);
    const voice = (fileId: string) =>
      telegram.pushMessage({
        chat: DM,
        from: OWNER,
        extra: {
          voice: {
            file_id: fileId,
            file_unique_id: fileId,
            duration: 2,
            mime_type: "audio/ogg",
            file_size: 20,
          },
        },
      });
    voice("VOICE1");
    const refused = await waitForText(started, /Budget reached/, "the budget message");
    expect(refused).toContain("budgets.perTurn.tokens is 20 tokens per turn");
    expect(refused).toContain("30 tokens have been used in this turn");
    expect(llm.transcriptionRequests).toHaveLength(1);
    expect(llm.requests).toHaveLength(0);
    const [row] = ledger(started.app);
    expect(row!.turn_id).toMatch(/^inbox:\d+$/);
  });

  it("a voice note sent past a daily cap is not transcribed", async () => {
    const started = await start({
      llm: { transcriptionModel: "whisper-test" },
      budgets: { daily: { tokens: 20 } },
    });
    const { llm, telegram } = started;
    llm.script(reply.text("first answer"));
    started.say("hello");
    await waitForText(started, /^first answer$/, "the first answer");
    telegram.files.set("VOICE2", { path: "voice/v2.oga", content: Buffer.from("OggS more bytes") });
    telegram.pushMessage({
      chat: DM,
      from: OWNER,
      extra: {
        voice: {
          file_id: "VOICE2",
          file_unique_id: "v2",
          duration: 2,
          mime_type: "audio/ogg",
          file_size: 15,
        },
      },
    });
    await waitForText(started, /budgets\.daily\.tokens/, "the budget message");
    expect(llm.transcriptionRequests).toHaveLength(0);
    expect(llm.requests).toHaveLength(1);
  });
});
