import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { EchoLlm } from "../soak/echo-llm.js";
import { LINES_FILE, ToolLlm } from "../soak/tool-llm.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * Waiting out an LLM outage through the built CLI (the traffic runs are test/soak/outage-soak.test.ts): past
 * `agent.retryOutageForSecs` a parked turn fails with a second notice; /stop drops a parked turn; a restart
 * while a turn is parked keeps its notice (no second one) and answers it once the model is back.
 */
const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const task of cleanup.splice(0).reverse()) await task().catch(() => {});
});

const CHAT = 830_001;
const NOTICE = /^The model is unreachable — I'll answer when it's back/;

/** A port nothing listens on (yet): requests to it are refused. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function until(check: () => boolean, what: () => string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function start(llmPort: number, agent: object, more: Record<string, unknown> = {}) {
  const telegram = await new FakeTelegram().start();
  cleanup.push(() => telegram.close());
  const bot = await ShippedBot.start({
    config: {
      ...more,
      llm: { baseUrl: `http://127.0.0.1:${llmPort}/v1`, apiKey: "sk-x", model: "echo", maxRetries: 0 },
      agent: { streaming: false, progressNoticeSecs: 0, ...agent },
      channels: {
        telegram: {
          token: telegram.validToken,
          apiRoot: telegram.apiRoot,
          pacing: false,
          allowFrom: [String(CHAT)],
        },
      },
    },
  });
  cleanup.push(() => bot.dispose());
  const say = (text: string) =>
    telegram.pushMessage({
      chat: { id: CHAT, type: "private" },
      from: { id: CHAT, first_name: "Ann" },
      text,
    });
  return { telegram, bot, say, texts: () => telegram.sentTexts() };
}

/** Outbox rows the platform took and Magpie recorded as sent. */
function sentRows(bot: ShippedBot): number {
  const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT count(*) FROM outbox WHERE status = 'sent'").pluck().get() as number;
  } finally {
    db.close();
  }
}

function inbox(
  bot: ShippedBot,
): Array<{ status: string; outcome: string | null; outcome_cause: string | null }> {
  const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT status, outcome, outcome_cause FROM inbox ORDER BY id").all() as ReturnType<
      typeof inbox
    >;
  } finally {
    db.close();
  }
}

describe("waiting out an LLM outage (shipped build)", () => {
  it("past agent.retryOutageForSecs the parked turn fails with a second notice", async () => {
    const { bot, say, texts } = await start(await freePort(), { retryOutageForSecs: 4 });
    say("anyone there?");
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()[0]).toMatch(NOTICE);
    expect(texts()[1]).toMatch(
      /^The model is still unreachable after [45] s and \d+ tries \(agent\.retryOutageForSecs\)/,
    );
    expect(texts()[1]).toMatch(/couldn't reach the language model/);
    await until(
      () => inbox(bot)[0]?.outcome === "failed",
      () => JSON.stringify(inbox(bot)),
    );
    expect(inbox(bot)[0]!.outcome_cause).toMatch(/^llm\.unreachable \(waited [45] s\)$/);
    expect(bot.logsOf("turn-parked").length).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it("/stop drops the parked turn with a clear reply; it is never answered", async () => {
    const port = await freePort();
    const { bot, say, texts } = await start(port, { retryOutageForSecs: 120 });
    say("a long question");
    await until(
      () => bot.logsOf("turn-parked").length >= 1,
      () => bot.logText(),
    );
    say("/stop");
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()).toEqual([
      expect.stringMatching(NOTICE),
      "Stopped (and dropped your message that was waiting for the model; it won't be answered).",
    ]);
    await until(
      () => inbox(bot)[0]?.outcome === "interrupted",
      () => JSON.stringify(inbox(bot)),
    );
    expect(inbox(bot)[0]).toMatchObject({ status: "done", outcome_cause: "stopped" });
    // The model comes back: the dropped message stays unanswered.
    const llm = await new EchoLlm({ delayMs: [1, 5], faultRate: 0, random: Math.random }).start(port);
    cleanup.push(() => llm.close());
    say("q7x next one");
    await until(
      () => texts().length >= 3,
      () => JSON.stringify(texts()),
    );
    expect(texts()[2]).toBe("ack q7x");
    expect(llm.requests).toBe(1);
  }, 30_000);

  it("a restart while a turn is parked: no second notice, answered once when the model is back", async () => {
    const port = await freePort();
    const { bot, say, texts } = await start(port, { retryOutageForSecs: 120 });
    say("q1x where are my keys?");
    await until(
      () => bot.logsOf("turn-parked").length >= 1,
      () => bot.logText(),
    );
    const stopStarted = Date.now();
    await bot.restart({
      whileStopped: async () => {
        // A parked turn does not hold the stop for the running turns' grace (6 s).
        expect(Date.now() - stopStarted).toBeLessThan(5_000);
        expect(inbox(bot)[0]).toMatchObject({ status: "pending", outcome: null });
      },
    });
    const llm = await new EchoLlm({ delayMs: [1, 5], faultRate: 0, random: Math.random }).start(port);
    cleanup.push(() => llm.close());
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()).toEqual([expect.stringMatching(NOTICE), "ack q1x"]);
    expect(inbox(bot)[0]).toMatchObject({ status: "done", outcome: "answered" });
    expect(inbox(bot)[0]!.outcome_cause).toMatch(
      /^after waiting \d+ s for the model \(\d+ failed tr(y|ies)\)$/,
    );
    // `magpie trace` shows the wait: the turns that failed on the model, the notice, the answer and its cause.
    const trace = await bot.cli(["trace", "last"]);
    expect(trace.code, trace.stderr).toBe(0);
    expect(trace.stdout).toMatch(/error \(llm\.unreachable\)/);
    expect(trace.stdout).toMatch(/ok in /);
    expect(trace.stdout).toMatch(/outcome: answered — after waiting \d+ s for the model/);
    expect(trace.stdout).toMatch(/outbox \d+ \(notice\) · sent/);
    // Nothing more comes.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(texts()).toHaveLength(2);
  }, 40_000);
});

/**
 * The model goes down right after it asked for a side-effecting call (`file_append` of a line): the turn waits the
 * outage out with its step journal and resumes after the call — the line is written once, whatever happens while
 * it waits (issue 35 → Waiting out an outage, Durable turns).
 */
describe("waiting out an LLM outage after a tool call ran (shipped build)", () => {
  async function startWithTools(agent: object) {
    const llm = await new ToolLlm({
      delayMs: [1, 5],
      faultRate: 0,
      random: Math.random,
      downAfterToolCall: true,
    }).start();
    cleanup.push(() => llm.close());
    const port = Number(new URL(llm.url).port);
    const started = await start(port, agent, {
      agents: { main: { toolSet: ["file_append", "file_grep"] } },
    });
    const lines = () => {
      const file = path.join(started.bot.workspace, LINES_FILE);
      return existsSync(file) ? readFileSync(file, "utf8") : "";
    };
    return { ...started, llm, lines };
  }

  it("the appended line stays one line: one notice, then one answer once the model is back; the wait traced", async () => {
    const { bot, say, texts, llm, lines } = await startWithTools({ retryOutageForSecs: 120 });
    say("q1x note this down");
    await until(
      () => bot.logsOf("turn-parked").length >= 2,
      () => bot.logText(),
    );
    expect(llm.isDown).toBe(true);
    expect(lines()).toBe("q1x\n");
    expect(texts()).toEqual([expect.stringMatching(NOTICE)]);
    await llm.up();
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()).toEqual([expect.stringMatching(NOTICE), "ack q1x"]);
    expect(lines()).toBe("q1x\n");
    // Resumed from the journal: the append was replayed, not run again.
    expect(bot.logsOf("turn-resumed").at(-1)).toMatchObject({
      steps: 1,
      toolCalls: 1,
      rerun: 0,
      outcomeUnknown: 0,
    });
    await until(
      () => inbox(bot)[0]?.outcome === "answered",
      () => JSON.stringify(inbox(bot)),
    );
    expect(inbox(bot)[0]!.outcome_cause).toMatch(
      /^after waiting \d+ s for the model \(\d+ failed tr(y|ies)\)$/,
    );
    const trace = await bot.cli(["trace", "last"]);
    expect(trace.code, trace.stderr).toBe(0);
    expect(trace.stdout).toMatch(/error \(llm\.unreachable\)/);
    expect(trace.stdout).toMatch(/outcome: answered — after waiting \d+ s for the model/);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(texts()).toHaveLength(2);
    expect(lines()).toBe("q1x\n");
  }, 40_000);

  it("past agent.retryOutageForSecs: failed, and the second notice names the append already done", async () => {
    const { bot, say, texts, lines } = await startWithTools({ retryOutageForSecs: 4 });
    say("q2x note this down");
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()[0]).toMatch(NOTICE);
    expect(texts()[1]).toMatch(/^The model is still unreachable after [45] s and \d+ tries/);
    expect(texts()[1]).toContain("Already done before the model went away: file_append (done).");
    await until(
      () => inbox(bot)[0]?.outcome === "failed",
      () => JSON.stringify(inbox(bot)),
    );
    expect(inbox(bot)[0]!.outcome_cause).toMatch(/^llm\.unreachable \(waited [45] s\)$/);
    expect(lines()).toBe("q2x\n");
  }, 30_000);

  it("SIGKILLed while parked: the restart resumes after the append (still one line), no second notice", async () => {
    const { bot, say, texts, llm, lines } = await startWithTools({ retryOutageForSecs: 120 });
    say("q3x note this down");
    await until(
      () => bot.logsOf("turn-parked").length >= 1,
      () => bot.logText(),
    );
    await until(
      () => texts().length >= 1,
      () => JSON.stringify(texts()),
    );
    // Killed while parked, not while the notice is on its way: a send the platform took but the outbox had not yet
    // recorded is sent again after a restart (Telegram takes no idempotency key; the crash soaks count those).
    await until(
      () => sentRows(bot) >= 1,
      () => JSON.stringify(texts()),
    );
    await bot.kill();
    expect(inbox(bot)[0]).toMatchObject({ outcome: null });
    const parkedBefore = bot.logsOf("turn-parked").length;
    await bot.relaunch();
    // The restarted process tries again while the model is still down: parked again, without a second notice.
    await until(
      () => bot.logsOf("turn-parked").length > parkedBefore,
      () => bot.logText(),
    );
    expect(bot.logsOf("turn-parked").at(-1)).toMatchObject({ noticed: false });
    await llm.up();
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()).toEqual([expect.stringMatching(NOTICE), "ack q3x"]);
    expect(lines()).toBe("q3x\n");
    expect(bot.logsOf("turn-resumed").at(-1)).toMatchObject({ rerun: 0, outcomeUnknown: 0 });
    await until(
      () => inbox(bot)[0]?.outcome === "answered",
      () => JSON.stringify(inbox(bot)),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(texts()).toHaveLength(2);
  }, 45_000);
  it("ATTACK: SIGKILLed while parked, /stop before the restarted bot tries again: the append stays in history", async () => {
    const { bot, say, texts, lines } = await startWithTools({ retryOutageForSecs: 120 });
    say("q4x note this down");
    await until(
      () => bot.logsOf("turn-parked").length >= 1 && sentRows(bot) >= 1,
      () => bot.logText(),
    );
    await bot.kill();
    // The next try is a minute away (a longer back-off): the restarted bot holds the turn with its journal alone.
    const dead = new Database(path.join(bot.dataDir, "magpie.db"), { fileMustExist: true });
    const moved = dead
      .prepare("UPDATE kv SET value = json_set(value, '$.retryAt', ?) WHERE key LIKE 'outage:%'")
      .run(Date.now() + 60_000).changes;
    dead.close();
    expect(moved).toBe(1);
    await bot.relaunch();
    say("/stop");
    await until(
      () => texts().length >= 2,
      () => `${JSON.stringify(texts())}\n${bot.logText()}`,
    );
    expect(texts()[1]).toMatch(/^Stopped/);
    await until(
      () => inbox(bot)[0]?.outcome === "interrupted",
      () => JSON.stringify(inbox(bot)),
    );
    const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true, fileMustExist: true });
    const rows = db.prepare("SELECT role, content, tool_calls FROM messages ORDER BY id").all() as Array<{
      role: string;
      content: string | null;
      tool_calls: string | null;
    }>;
    db.close();
    // The append it did stays in history (call and result): the chat's next turn knows it took effect.
    expect(
      rows.map((row) => row.role),
      JSON.stringify(rows),
    ).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(rows[1]!.tool_calls).toContain("file_append");
    expect(rows[2]!.content).toMatch(/Appended \d+ bytes/);
    expect(bot.logsOf("turn-resumed")).toHaveLength(0);
    expect(lines()).toBe("q4x\n");
  }, 45_000);
});
