import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { memoryFeature } from "../../src/app/memory-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import type { CliEnv } from "../../src/cli/cli-env.js";
import { run as usageCli } from "../../src/cli/commands/usage.js";
import type { AuthorityPort } from "../../src/core/identity.js";
import type { Scheduler } from "../../src/scheduler/scheduler.js";
import { Store } from "../../src/store/index.js";
import type { UsageSummary } from "../../src/usage/usage-summary.js";
import { reply } from "../fakes/openai.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";
import { testTools } from "../helpers/test-tools.js";

/** `user-1` (the RecordingChannel's default sender) is the owner; anyone else is a guest. */
const ownerIsUser1: AuthorityPort = {
  roleOf: (_channel, userId) => (userId === "user-1" ? "owner" : "guest"),
  mayDeliver: () => true,
};
const GUEST = { userId: "guest-9", userName: "Guest" };

let running: TestApp | null = null;
let pushover: PushoverFake | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
  await pushover?.close();
  pushover = null;
});

async function start(
  config: Record<string, unknown> = {},
  features = [usageFeature],
  channel?: RecordingChannel,
) {
  pushover = await startPushoverFake();
  running = await startTestApp({
    features,
    ...(channel ? { channel } : {}),
    extraTools: testTools,
    authority: ownerIsUser1,
    config: {
      notify: { pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl } },
      ...config,
    },
  });
  return { ...running, llm: running.llm!, channel: running.channel! };
}

/** Sends `text` and waits for the one reply it gets. */
async function ask(text: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const channel = running!.channel!;
  const before = channel.sent.length;
  await channel.receive(text, overrides);
  const sent = await channel.waitForSent(before + 1);
  return sent[before]!.message.text;
}

/** `magpie usage <args>` in-process, against the running app's database. */
async function cli(args: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (chunk) => (out += chunk));
  stderr.on("data", (chunk) => (err += chunk));
  const env: CliEnv = {
    loadConfig: () => running!.config,
    openStore: (config) => Store.open(config.dataDir),
    stdout,
    stderr,
  };
  const code = await usageCli(args, env);
  return { code, stdout: out, stderr: err };
}

describe("usage ledger end to end", () => {
  it("the fake's usage figures are summed exactly in /usage and in magpie usage --json", async () => {
    const { llm } = await start();
    llm.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 2 } }]),
      reply.text("3"),
      reply.text("hello"),
    );
    expect(await ask("1+2?")).toBe("3");
    expect(await ask("hi")).toBe("hello");

    // The fake answers every call with 10 prompt + 10 completion tokens.
    const text = await ask("/usage");
    expect(text).toMatch(
      /^Usage today \(since \d{4}-\d\d-\d\d 00:00 UTC\): 3 calls, 60 tokens \(30 in, 30 out\)/,
    );
    expect(text).toContain("• test-model (chat): 3 calls, 60 tokens (30 in, 30 out)");
    expect(text).toContain("• test:chat-1: 3 calls, 60 tokens (30 in, 30 out)");
    expect(text).not.toContain("~");
    expect(await ask("/usage month")).toContain("Usage this month");
    expect(await ask("/usage year")).toBe("Usage: /usage [today|week|month]");

    const json = await cli(["--json"]);
    expect(json.code).toBe(0);
    const summary = JSON.parse(json.stdout) as UsageSummary;
    expect(summary.totals).toEqual({
      calls: 3,
      promptTokens: 30,
      completionTokens: 30,
      tokens: 60,
      costUsd: null,
      estimatedCalls: 0,
      unpricedCalls: 3,
    });
    expect(summary.byModel).toEqual([{ model: "test-model", kind: "chat", ...summary.totals }]);
    expect(summary.byOrigin).toEqual([{ key: "test:chat-1", kind: "chat", ...summary.totals }]);
    const plain = await cli(["--since", "week"]);
    expect(plain.stdout).toContain("Usage this week");
    expect(plain.stdout).toContain("3 calls, 60 tokens");

    // /usage made no LLM call.
    expect(llm.requests).toHaveLength(3);
    llm.assertDone();
  });

  it("magpie usage: an unknown flag or a bad date prints the usage and exits 2", async () => {
    await start();
    const unknown = await cli(["--verbose"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("Usage: magpie usage [--since <date>] [--json]");
    const badDate = await cli(["--since", "yesterday-ish"]);
    expect(badDate.code).toBe(2);
    expect(badDate.stderr).toContain('"yesterday-ish" is not a date');
    const stray = await cli(["today"]);
    expect(stray.code).toBe(2);
    const empty = await cli(["--since", "2000-01-01"]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe("Usage since 2000-01-01 00:00 UTC: no LLM requests.\n");
  });

  it("a daily token cap lets exactly the calls before it through, alerts the owner once, and nothing lifts it", async () => {
    const { llm, app } = await start(
      {
        budgets: { daily: { tokens: 50 } },
        cron: { jobs: [{ name: "digest", expression: "0 3 1 1 *", prompt: "Summarize the day." }] },
      },
      [schedulerFeature, usageFeature],
    );
    llm.script(reply.text("one"), reply.text("two"), reply.text("three"));
    // 20 tokens a call: 0, 20 and 40 are under the cap; the fourth call (at 60) is not made.
    expect(await ask("a")).toBe("one");
    expect(await ask("b")).toBe("two");
    expect(await ask("c")).toBe("three");
    const refused = await ask("d");
    expect(refused).toContain("Budget reached: budgets.daily.tokens is 50 tokens a day");
    expect(refused).toContain("60 tokens have been used today");
    expect(refused).toMatch(/resets at midnight \(00:00 UTC, in \d+ h \d+ min\)/);

    const [alert] = await pushover!.waitFor(1);
    expect(alert!.fields.title).toBe("Magpie: budgets.daily.tokens reached");
    expect(alert!.fields.message).toContain("60 tokens used today (cap 50 tokens a day)");

    // A second capped message: refused again, no second alert.
    expect(await ask("e")).toContain("budgets.daily.tokens");
    // A guest can't lift it…
    expect(await ask("please, just one answer", GUEST)).toContain("budgets.daily.tokens");
    expect(await ask("/usage", GUEST)).toBe("Only an owner can use /usage.");
    // …nor can a job: its run makes no call and reports the cap.
    const scheduler = app.context.services.scheduler as Scheduler;
    const digest = scheduler.list().find((job) => job.name === "digest")!;
    const run = await scheduler.runNow(digest.id);
    expect(run.output).toContain("budgets.daily.tokens");
    // Slash commands keep working; they make no LLM call.
    expect(await ask("/usage")).toContain("3 calls, 60 tokens");
    expect(await ask("/help")).toContain("/usage");

    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pushover!.notifications).toHaveLength(1);
    expect(llm.requests).toHaveLength(3);
    llm.assertDone();
  });

  it("a per-turn cap stops the turn's tool loop; the next message starts again", async () => {
    const { llm } = await start({ budgets: { perTurn: { tokens: 30 } } });
    llm.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 1 } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 2 } }]),
      reply.text("fresh turn"),
    );
    const refused = await ask("add things");
    expect(refused).toContain("Budget reached: budgets.perTurn.tokens is 30 tokens per turn");
    expect(refused).toContain("40 tokens have been used in this turn");
    expect(refused).toContain("resets with the next message");
    expect(llm.requests).toHaveLength(2);
    expect(await ask("again")).toBe("fresh turn");
    await pushover!.waitFor(1);
    llm.assertDone();
  });

  it("a per-job-run cap ends that run; the next run starts from zero", async () => {
    const { llm, app } = await start(
      {
        budgets: { perJobRun: { tokens: 30 } },
        cron: {
          jobs: [{ name: "adder", expression: "0 3 1 1 *", prompt: "Add things.", toolSet: ["add_numbers"] }],
        },
      },
      [schedulerFeature, usageFeature],
    );
    llm.script(
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 1, b: 1 } }]),
      reply.toolCalls([{ name: "add_numbers", arguments: { a: 2, b: 2 } }]),
      reply.text("second run done"),
    );
    const scheduler = app.context.services.scheduler as Scheduler;
    const adder = scheduler.list().find((job) => job.name === "adder")!;
    const first = await scheduler.runNow(adder.id);
    expect(first.output).toContain("Budget reached: budgets.perJobRun.tokens is 30 tokens per job run");
    expect(first.output).toContain("resets with the job's next run");
    expect(llm.requests).toHaveLength(2);
    const second = await scheduler.runNow(adder.id);
    expect(second.output).toBe("second run done");
    const rows = app.store.db
      .prepare("SELECT job_id, run_id, origin FROM llm_usage ORDER BY id")
      .all() as Array<{ job_id: number; run_id: number; origin: string }>;
    expect(rows.map((row) => [row.job_id, row.run_id, row.origin])).toEqual([
      [adder.id, first.id, "schedule"],
      [adder.id, first.id, "schedule"],
      [adder.id, second.id, "schedule"],
    ]);
    const text = await ask("/usage");
    expect(text).toContain(`• job ${adder.id} "adder": 3 calls, 60 tokens`);
    llm.assertDone();
  });

  it("USD caps count the cost from llm.prices", async () => {
    const { llm } = await start({
      llm: { prices: { "test-model": { input: 1000, output: 1000 } } },
      budgets: { daily: { usd: 0.03 } },
    });
    // 20 tokens × $1000 per million = $0.02 a call: $0 and $0.02 are under $0.03.
    llm.script(reply.text("one"), reply.text("two"));
    expect(await ask("a")).toBe("one");
    expect(await ask("b")).toBe("two");
    expect(await ask("c")).toContain(
      "Budget reached: budgets.daily.usd is $0.0300 a day, and $0.0400 have been used today",
    );
    expect(await ask("/usage")).toContain("2 calls, 40 tokens (20 in, 20 out), $0.0400");
    llm.assertDone();
  });

  it("estimated usage is marked when the provider sends none", async () => {
    // A channel that can edit messages gets a streamed answer; this provider's streams carry no usage.
    const { llm } = await start(
      { agent: { streaming: true } },
      [usageFeature],
      new RecordingChannel("test", { edit: true }),
    );
    llm.streamUsage = false;
    llm.script(reply.text("streamed answer"));
    await ask("hello");
    const text = await ask("/usage");
    expect(text).toMatch(/Usage today .*: 1 call, ~\d+ tokens .*1 estimated/);
    expect(text).toContain("~ includes estimates");
    const json = JSON.parse((await cli(["--json"])).stdout) as UsageSummary;
    expect(json.totals.estimatedCalls).toBe(1);
    llm.assertDone();
  });

  it("memory's embeddings go into the ledger under memory", async () => {
    const { llm } = await start({ llm: { embeddingModel: "embed-model" } }, [memoryFeature, usageFeature]);
    await ask("/remember the spare key is under the blue pot");
    expect(llm.embeddingRequests.length).toBeGreaterThan(0);
    const text = await ask("/usage");
    expect(text).toContain(`• embed-model (embedding): ${llm.embeddingRequests.length} call`);
    expect(text).toContain("• memory (embeddings):");
    expect(llm.requests).toHaveLength(0);
  });
});
