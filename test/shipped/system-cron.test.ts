import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { hasWorkingSandbox } from "../helpers/requires.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The scheduler through the shipped build: jobs from config (a shell command run on request from
 * `magpie cron run`, a one-shot `delay` message), a prompt job the model adds with cron_add, each report
 * delivered to the Telegram chat; `magpie cron list|run|runs` read and change the running bot's database.
 */

const OWNER = 701;
const DM = { id: OWNER, type: "private" as const };

/** A 6-field cron expression for the UTC second `secondsAhead` from now (it fires once during the test). */
function expressionSecondsAhead(secondsAhead: number): string {
  const at = new Date(Date.now() + secondsAhead * 1000);
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

describe("shipped build: cron jobs delivered to Telegram, and the cron CLI", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  /** The job's id from `magpie cron list` (config jobs get theirs at start-up). */
  const idOf = async (name: string): Promise<string> => {
    const list = await bot.cli(["cron", "list"]);
    const id = new RegExp(`^#(\\d+) ${name} `, "m").exec(list.stdout)?.[1];
    if (!id) throw new Error(`no job ${name} in: ${list.stdout}${list.stderr}`);
    return id;
  };

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    const toChat = { channel: "telegram", chatId: String(OWNER) };
    bot = await ShippedBot.start({
      config: {
        timezone: "UTC",
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        // Command jobs run in the shell's sandbox; explicit, so the test does not depend on the machine.
        tools: { shell: { sandbox: (await hasWorkingSandbox()) ? "bwrap" : "off" } },
        cron: {
          jobs: [
            // Never due in the test (1 January): it runs only when `magpie cron run` asks for it.
            { name: "disk", expression: "0 0 1 1 *", command: "echo disk-$((6 * 7))pc", deliver: toChat },
            { name: "stretch", delay: "3s", message: "Time to stretch", deliver: toChat },
            // Every 2 s and never reported: keeps the scheduler waking, so a CLI run request is picked up
            // within 2 s instead of the 15 s idle poll.
            { name: "heartbeat", expression: "*/2 * * * * *", command: "true", deliver: { mode: "none" } },
          ],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it("magpie cron list shows the config jobs with their schedules and chats", async () => {
    const list = await bot.cli(["cron", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      /^#\d+ disk \[active\] 0 0 1 1 \* \(UTC\) — shell: echo disk-.* → telegram:701$/m,
    );
    expect(list.stdout).toMatch(/^#\d+ stretch \[\w+\] once at \S+ \(UTC\) — message: Time to stretch/m);
    expect(list.stdout).toMatch(/^#\d+ heartbeat \[active\] \*\/2 \* \* \* \* \*/m);
  });

  it("a one-shot delay job's message reaches the chat once, and the job is done", async () => {
    const delivered = await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("Time to stretch")),
      "the one-shot message",
      15_000,
    );
    expect(delivered).toContain("stretch");
    const run = await waitFor(async () => {
      const runs = await bot.cli(["cron", "runs", await idOf("stretch")]);
      return /delivery delivered/.test(runs.stdout) && runs.stdout;
    }, "the one-shot's delivery to be recorded");
    expect(run.trim().split("\n")).toHaveLength(1);
    expect((await bot.cli(["cron", "list"])).stdout).toMatch(/^#\d+ stretch \[done\]/m);
    expect(telegram.sentTexts().filter((text) => text.includes("Time to stretch"))).toHaveLength(1);
  });

  it("magpie cron run: the running bot runs the command job and reports its output to the chat", async () => {
    const id = await idOf("disk");
    expect((await bot.cli(["cron", "runs", id])).stdout).toMatch(/has not run yet/);
    const requested = await bot.cli(["cron", "run", "disk"]);
    expect(requested.code).toBe(0);
    expect(requested.stdout).toContain(`Requested a run of job #${id}`);
    const report = await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("disk-42pc")),
      "the command job's report",
      15_000,
    );
    expect(report).toContain("disk");
    const runs = await waitFor(async () => {
      const result = await bot.cli(["cron", "runs", id]);
      return /delivery delivered/.test(result.stdout) && result.stdout;
    }, "the run's delivery to be recorded");
    expect(runs).toMatch(/^run \d+ \S+ ran in .* \(manual\) — delivery delivered — disk-42pc$/m);
    // The heartbeat ran meanwhile, recorded but never reported.
    expect((await bot.cli(["cron", "runs", await idOf("heartbeat")])).stdout).toMatch(
      / ran .*delivery (none|skipped)/,
    );
    expect(telegram.sentTexts().some((text) => text.includes("heartbeat"))).toBe(false);
  });

  it("cron_add from the model: the prompt job fires, runs an agent turn and its answer reaches the chat", async () => {
    let scheduledPrompt: unknown[] = [];
    llm.script(
      reply.toolCalls([
        {
          name: "cron_add",
          // Computed as the model answers, so a slow turn before it cannot push the time into the past.
          arguments: () => ({
            expression: expressionSecondsAhead(3),
            prompt: "Report the shed temperature.",
            name: "shed report",
          }),
        },
      ]),
      reply.text("I'll report the shed temperature."),
      reply.text("Shed is at 21 C.", (body) => {
        scheduledPrompt = body.messages
          .filter((message) => message.role === "user")
          .map((message) => message.content);
      }),
    );
    telegram.pushMessage({ chat: DM, from: { id: OWNER }, text: "report the shed temperature daily" });
    await waitFor(
      () => telegram.sentTexts().includes("I'll report the shed temperature."),
      "the confirmation",
      15_000,
    );
    const delivered = await waitFor(
      () =>
        telegram
          .callsOf("sendMessage")
          .find((call) => !call.failed && String(call.body.text).includes("Shed is at 21 C.")),
      "the scheduled report",
      15_000,
    );
    expect(String(delivered.body.chat_id)).toBe(String(OWNER));
    expect(String(delivered.body.text)).toContain("shed report");
    expect(scheduledPrompt).toEqual(["Report the shed temperature."]);
    const runs = await waitFor(async () => {
      const result = await bot.cli(["cron", "runs", await idOf("shed report")]);
      return /delivery delivered/.test(result.stdout) && result.stdout;
    }, "the prompt job's run");
    expect(runs).toMatch(/ ran in .* — delivery delivered/);
    llm.assertDone();
  });
});
