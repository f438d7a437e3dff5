import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/**
 * Background subagents (DESIGN.md → Agent core → `spawn`) end to end: the owner's Telegram DM through the real
 * grammY client against the Telegram fake, the scripted LLM, SQLite task records, `/tasks` and `/stop`.
 * `agent.maxConcurrentTurns: 1` makes the order of LLM requests deterministic: a subagent waits for the slot
 * its parent's turn holds, so the parent's turn always finishes first.
 */

const OWNER = { id: 777, first_name: "Alice" };
const DM = { id: 777, type: "private" as const };
const SUBAGENT_TOOLS = ["file_edit", "file_read", "file_write", "git_operations", "shell", "spill_read"];

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

interface Setup {
  telegram: FakeTelegram;
  testApp: TestApp;
  llm: OpenAiFake;
}

async function start(
  agent: Record<string, unknown> = {},
  reuse?: { telegram: FakeTelegram; llm: OpenAiFake; dataDir: string },
): Promise<Setup> {
  const telegram = reuse?.telegram ?? (await new FakeTelegram().start());
  const llm = reuse?.llm ?? (await startOpenAiFake());
  if (!reuse) {
    cleanup.push(() => telegram.close());
    cleanup.push(() => llm.close());
  }
  const testApp = await startTestApp({
    features,
    loadChannels: true,
    channel: null,
    llm,
    ...(reuse ? { dataDir: reuse.dataDir } : {}),
    config: {
      agent: { maxConcurrentTurns: 1, ...agent },
      channels: {
        telegram: {
          token: telegram.validToken,
          apiRoot: telegram.apiRoot,
          pacing: false,
          allowFrom: [OWNER.id],
        },
      },
    },
  });
  cleanup.push(() => testApp.stop());
  return { telegram, testApp, llm };
}

const say = (telegram: FakeTelegram, text: string) => {
  const [command] = text.split(" ");
  telegram.pushMessage({
    chat: DM,
    from: OWNER,
    text,
    ...(text.startsWith("/")
      ? { entities: [{ type: "bot_command", offset: 0, length: command!.length }] }
      : {}),
  });
};

const dmTexts = (telegram: FakeTelegram) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed && String(call.body.chat_id) === String(DM.id))
    .map((call) => String(call.body.text));

const waitForText = (telegram: FakeTelegram, pattern: RegExp, what: string) =>
  waitFor(() => dmTexts(telegram).find((text) => pattern.test(text)), what);

interface ToolResult {
  task_id?: string;
  ok?: boolean;
  error?: { code: string; message: string };
}

/** The tool results the LLM got back in a request, parsed. */
const toolResults = (body: ChatRequestBody) =>
  body.messages
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as ToolResult);

const toolNamesOf = (body: ChatRequestBody) => (body.tools ?? []).map((tool) => tool.function.name).sort();

function taskRows(testApp: TestApp) {
  return testApp.app.store.db
    .prepare("SELECT id, label, status, result_excerpt AS result FROM tasks ORDER BY rowid")
    .all() as Array<{
    id: string;
    label: string | null;
    status: string;
    result: string | null;
  }>;
}

describe("spawn: background subagents", () => {
  it("returns a task id at once; the subagent gets only the subagent set; its result reaches the chat and a follow-up turn", async () => {
    const { telegram, testApp, llm } = await start();
    let taskId = "";
    llm.script(
      reply.toolCalls([
        { name: "spawn", arguments: { task: "Count the files in the workspace.", label: "counter" } },
      ]),
      reply.text("I started a background task.", (body) => {
        const [result] = toolResults(body);
        taskId = String(result?.task_id);
        expect(taskId).toMatch(/^[0-9a-f]{8}$/);
        // The tool answered while the subagent had not even started.
        expect(taskRows(testApp)).toEqual([
          { id: taskId, label: "counter", status: "running", result: null },
        ]);
      }),
      reply.text("There are 3 files.", (body) => {
        expect(toolNamesOf(body)).toEqual(SUBAGENT_TOOLS);
        expect(body.messages.filter((message) => message.role !== "system")).toEqual([
          { role: "user", content: "Count the files in the workspace." },
        ]);
      }),
      reply.text("Done: your workspace has 3 files.", (body) => {
        const note = String(body.messages.at(-1)?.content);
        expect(note).toContain("Background task result — counter; not typed by the user");
        expect(note).toContain("There are 3 files.");
        expect(toolNamesOf(body)).toContain("spawn");
      }),
    );
    say(telegram, "count my files in the background");
    await waitForText(telegram, /^Done: your workspace/, "the follow-up turn's reply");
    expect(dmTexts(telegram)).toEqual([
      "I started a background task.",
      `Background task ${taskId} (counter) finished: There are 3 files.`,
      "Done: your workspace has 3 files.",
    ]);
    llm.assertDone();
    expect(taskRows(testApp)).toEqual([
      { id: taskId, label: "counter", status: "done", result: "There are 3 files." },
    ]);

    say(telegram, "/tasks");
    const listing = await waitForText(telegram, /^Background tasks:/, "the /tasks reply");
    expect(listing).toMatch(new RegExp(`${taskId} \\(counter\\) — done after \\d+s: There are 3 files\\.`));
  });

  it("refuses message, spawn, cron_add and memory_store to a subagent at dispatch, audited as deny; nothing happens", async () => {
    const { telegram, testApp, llm } = await start();
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Tidy up.", label: "tidy" } }]),
      reply.text("Started."),
      reply.toolCalls([
        { name: "message", arguments: { content: "hello from the subagent", chat_id: "666" } },
        { name: "spawn", arguments: { task: "more" } },
        { name: "cron_add", arguments: { delay: "1m", command: "echo pwned" } },
        { name: "memory_store", arguments: { key: "owner_password", content: "hunter2" } },
      ]),
      reply.text("I was not allowed to do any of that.", (body) => {
        const results = toolResults(body);
        expect(results.map((result) => result.error?.code)).toEqual([
          "tool.not_in_tool_set",
          "tool.not_in_tool_set",
          "tool.not_in_tool_set",
          "tool.not_in_tool_set",
        ]);
        expect(results[0]!.error!.message).toContain("not in this turn's tool set (a spawn turn)");
      }),
      reply.text("The subagent could not do it."),
    );
    say(telegram, "tidy up in the background");
    await waitForText(telegram, /^The subagent could not do it\.$/, "the follow-up turn's reply");
    llm.assertDone();

    const { db } = testApp.app.store;
    const refused = db
      .prepare(
        "SELECT session_key AS session, tool, verdict, outcome, error_code AS code FROM audit WHERE verdict = 'deny' ORDER BY id",
      )
      .all();
    expect(refused).toEqual(
      ["message", "spawn", "cron_add", "memory_store"].map((tool) => ({
        session: "telegram:777",
        tool,
        verdict: "deny",
        outcome: "denied",
        code: "tool.not_in_tool_set",
      })),
    );
    expect(db.prepare("SELECT count(*) AS n FROM cron_jobs").get()).toEqual({ n: 0 });
    expect(db.prepare("SELECT count(*) AS n FROM memories").get()).toEqual({ n: 0 });
    expect(db.prepare("SELECT count(*) AS n FROM outbox WHERE origin = 'message'").get()).toEqual({ n: 0 });
    expect(taskRows(testApp).map((task) => task.status)).toEqual(["done"]);
    expect(dmTexts(telegram).join("\n")).not.toContain("hello from the subagent");
  });

  it("keeps to agent.maxSubagents; /tasks lists the running ones; /stop <id> cancels one, /stop the rest", async () => {
    const { telegram, testApp, llm } = await start({ maxSubagents: 2 });
    const ids: string[] = [];
    llm.script(
      reply.toolCalls([
        { name: "spawn", arguments: { task: "slow job A", label: "a" } },
        { name: "spawn", arguments: { task: "slow job B", label: "b" } },
        { name: "spawn", arguments: { task: "slow job C", label: "c" } },
      ]),
      reply.text("Two started, one refused.", (body) => {
        const [first, second, third] = toolResults(body);
        ids.push(String(first?.task_id), String(second?.task_id));
        expect(third).toMatchObject({ ok: false, error: { code: "spawn.limit_reached" } });
        expect(third!.error!.message).toContain("agent.maxSubagents is 2");
      }),
      // Subagent A, then (once A is cancelled and gives the slot back) subagent B: neither ever answers.
      reply.hang(),
      reply.hang(),
    );
    say(telegram, "start three slow jobs");
    await waitForText(telegram, /^Two started/, "the parent's reply");
    await waitFor(() => llm.requests.length === 3, "subagent A's LLM request");
    const [a, b] = ids as [string, string];

    say(telegram, "/tasks");
    const listing = await waitForText(telegram, /^Background tasks:/, "the /tasks reply");
    expect(listing).toMatch(new RegExp(`▶ ${a} \\(a\\) — running for`));
    expect(listing).toMatch(new RegExp(`▶ ${b} \\(b\\) — running for`));
    expect(listing).not.toContain("(c)");

    say(telegram, `/stop ${a}`);
    await waitForText(telegram, new RegExp(`^Cancelled task ${a}\\.$`), "the /stop <id> reply");
    await waitFor(() => taskRows(testApp)[0]?.status === "cancelled", "task A cancelled");
    await waitFor(() => llm.requests.length === 4, "subagent B's LLM request");
    expect(taskRows(testApp)[1]?.status).toBe("running");

    say(telegram, "/stop nonsense");
    await waitForText(telegram, /^No running task "nonsense" in this chat/, "the unknown-task reply");
    say(telegram, "/stop");
    await waitForText(
      telegram,
      new RegExp(`^Stopped \\(and cancelled 1 background task: ${b}\\)\\.$`),
      "the /stop reply",
    );
    await waitFor(() => taskRows(testApp)[1]?.status === "cancelled", "task B cancelled");
    expect(taskRows(testApp).map((task) => [task.label, task.status])).toEqual([
      ["a", "cancelled"],
      ["b", "cancelled"],
    ]);
    // A cancelled task starts no follow-up turn.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(llm.requests).toHaveLength(4);
    llm.assertDone();
  });

  it("stops a subagent at agent.subagentTimeoutSecs and reports the timeout into the chat", async () => {
    const { telegram, testApp, llm } = await start({ subagentTimeoutSecs: 0.3 });
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "never ends" } }]),
      reply.text("Started."),
      reply.hang(),
      reply.text("The task timed out; shall I try a smaller one?", (body) => {
        expect(String(body.messages.at(-1)?.content)).toContain("timed out (status: timeout)");
      }),
    );
    say(telegram, "go");
    const shown = await waitForText(telegram, /timed out:/, "the timeout notice");
    expect(shown).toMatch(
      /^Background task [0-9a-f]{8} timed out: Stopped after 0\.3 s \(agent\.subagentTimeoutSecs\)/,
    );
    await waitForText(telegram, /^The task timed out; shall I/, "the follow-up turn's reply");
    expect(taskRows(testApp).map((task) => task.status)).toEqual(["timeout"]);
    llm.assertDone();
  });

  it("records a task still running at a restart as interrupted and says so in its chat", async () => {
    const first = await start();
    const { telegram, llm } = first;
    llm.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "a long crawl", label: "crawl" } }]),
      reply.text("Started."),
      reply.hang(),
    );
    say(telegram, "crawl in the background");
    await waitFor(() => llm.requests.length === 3, "the subagent's LLM request");
    const [task] = taskRows(first.testApp);
    expect(task?.status).toBe("running");
    await first.testApp.stop({ keepData: true, keepLlm: true });

    const second = await start({}, { telegram, llm, dataDir: first.testApp.dataDir });
    await waitForText(telegram, /^Magpie restarted while a background task/, "the interrupted notice");
    expect(dmTexts(telegram).filter((text) => text.startsWith("Magpie restarted"))).toEqual([
      `Magpie restarted while a background task was running: ${task!.id} (crawl) — interrupted. Start again if still needed.`,
    ]);
    expect(taskRows(second.testApp)).toEqual([
      { id: task!.id, label: "crawl", status: "interrupted", result: "Magpie restarted while the task ran." },
    ]);
    say(telegram, "/tasks");
    const listing = await waitForText(telegram, /^Background tasks:/, "the /tasks reply");
    expect(listing).toContain(`· ${task!.id} (crawl) — interrupted`);
    llm.assertDone();
  });
});
