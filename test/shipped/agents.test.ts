import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DISCORD_DM_CHANNEL_ID, DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeSlack, SLACK_TEAM } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

/**
 * The agent paths through the shipped build (`node dist/bundle/main.js start`) on the Telegram fake: delegate to
 * a second named agent, spawn with the result put back in the chat, ask_question answered by a button and by
 * text, approvals (button, /approve <id>, deny), failover to a second OpenAI fake, memory with embeddings, the
 * `/status`, `/model` and `/usage` commands, and `magpie usage` on the same database afterwards.
 */

const OWNER = { id: 501, first_name: "Alice" };
/** A second owner whose DM is routed to `reader`, an agent limited to [web_fetch, file_read, spawn]. */
const READER_USER = { id: 502, first_name: "Bob" };
const SLACK_USER = "U0ALICE";
const SLACK_DM = "D0DM";
const DM = { id: OWNER.id, type: "private" as const };

type Keyboard = Array<Array<{ text: string; callback_data: string }>>;

/** Messages to the owner's DM: text and buttons, delivered ones only. */
const dmMessages = (telegram: FakeTelegram) =>
  telegram
    .callsOf("sendMessage")
    .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
    .map((call) => ({
      text: String(call.body.text),
      keyboard: (call.body.reply_markup as { inline_keyboard?: Keyboard } | undefined)?.inline_keyboard,
    }));

const dmTexts = (telegram: FakeTelegram) => dmMessages(telegram).map((message) => message.text);

function say(telegram: FakeTelegram, text: string): void {
  const [command] = text.split(" ");
  telegram.pushMessage({
    chat: DM,
    from: OWNER,
    text,
    ...(text.startsWith("/")
      ? { entities: [{ type: "bot_command", offset: 0, length: command!.length }] }
      : {}),
  });
}

/** Sends `text` as the owner and resolves with the first new DM text matching `pattern`. */
async function ask(telegram: FakeTelegram, text: string, pattern: RegExp = /[\s\S]/): Promise<string> {
  const before = dmTexts(telegram).length;
  say(telegram, text);
  return waitFor(
    () =>
      dmTexts(telegram)
        .slice(before)
        .find((sent) => pattern.test(sent)),
    `the reply to ${text}`,
    20_000,
  );
}

function press(telegram: FakeTelegram, data: string): number {
  return telegram.pushUpdate({
    callback_query: {
      id: `cb-${data}`,
      from: { ...OWNER, is_bot: false },
      chat_instance: "ci",
      data,
      message: { message_id: 9, date: 0, chat: DM, text: "buttons" },
    },
  });
}

describe("shipped build: delegate, spawn, questions, approvals, failover, memory, /model and usage", () => {
  let telegram: FakeTelegram;
  let primary: OpenAiFake;
  let fallback: OpenAiFake;
  let bot: ShippedBot;
  /** Chat requests that the primary answered with an error (not in the usage ledger). */
  let primaryFailures = 0;

  beforeAll(async () => {
    [telegram, primary, fallback] = await Promise.all([
      new FakeTelegram().start(),
      startOpenAiFake(),
      startOpenAiFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        llm: {
          baseUrl: primary.url,
          apiKey: "sk-test",
          model: "test-model",
          embeddingModel: "embed-small",
          maxRetries: 0,
          fallbacks: [{ model: "fb-model", baseUrl: fallback.url }],
        },
        // One turn slot: a subagent waits for its parent's turn, so the order of LLM requests is fixed.
        agent: { streaming: false, maxConcurrentTurns: 1 },
        agents: {
          main: { toolSet: "full" },
          helper: { toolSet: "subagent" },
          reader: { toolSet: ["web_fetch", "file_read", "spawn"] },
        },
        routes: [{ match: { channel: "telegram", userId: String(READER_USER.id) }, agent: "reader" }],
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id, READER_USER.id],
          },
        },
        security: { approvals: { require: ["file_write"], timeoutSecs: 60 } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), primary?.close(), fallback?.close()]);
  });

  it("delegate runs the second named agent with its own tool set and its answer comes back as the tool result", async () => {
    let helperTools: string[] = [];
    let helperPrompt: unknown;
    let seen: Record<string, string> = {};
    primary.script(
      reply.toolCalls([
        {
          name: "delegate",
          arguments: { agent: "helper", prompt: "Summarize the logs", context: "disk 91%" },
        },
      ]),
      reply.text("The disk is nearly full.", (body) => {
        helperTools = (body.tools ?? []).map((tool) => tool.function.name).sort();
        helperPrompt = body.messages.at(-1);
      }),
      reply.text("The helper says: the disk is nearly full.", (body) => {
        seen = toolResults(body);
      }),
    );
    await ask(telegram, "please delegate the log summary", /^The helper says/);
    expect(helperPrompt).toMatchObject({ role: "user", content: "Summarize the logs\n\nContext:\ndisk 91%" });
    expect(helperTools).toEqual([
      "file_edit",
      "file_read",
      "file_write",
      "git_operations",
      "shell",
      "spill_read",
    ]);
    expect(seen.delegate).toBe("The disk is nearly full.");
    primary.assertDone();
  });

  it("spawn returns a task id at once; the subagent's result is put back in the chat and starts a follow-up turn", async () => {
    let taskId = "";
    let followUp = "";
    primary.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Count the files.", label: "counter" } }]),
      reply.text("I started a background task.", (body) => {
        taskId = String(JSON.parse(toolResults(body).spawn ?? "{}").task_id);
      }),
      reply.text("There are 3 files."),
      reply.text("Done: your workspace has 3 files.", (body) => {
        followUp = String(body.messages.at(-1)?.content);
      }),
    );
    await ask(telegram, "count my files in the background", /^Done: your workspace/);
    expect(taskId).toMatch(/^[0-9a-f]{8}$/);
    expect(dmTexts(telegram)).toContain(`Background task ${taskId} (counter) finished: There are 3 files.`);
    expect(followUp).toContain("Background task result — counter");
    expect(followUp).toContain("There are 3 files.");
    const tasks = await ask(telegram, "/tasks", /^Background tasks:/);
    expect(tasks).toMatch(new RegExp(`${taskId} \\(counter\\) — done after \\d+s: There are 3 files\\.`));
    primary.assertDone();
  });

  it("spawn from an agent limited to [web_fetch, file_read, spawn]: the subagent gets file_read only, its shell is refused and audited", async () => {
    const marker = path.join(bot.workspace, "pwned");
    let spawned: { tools?: string[] } = {};
    let offered: string[] = [];
    let refused: { refused?: boolean; error?: { code: string } } = {};
    primary.script(
      reply.toolCalls([{ name: "spawn", arguments: { task: "Clean the build.", label: "clean" } }]),
      reply.text("Started.", (body) => {
        spawned = JSON.parse(toolResults(body).spawn ?? "{}");
      }),
      reply.toolCalls([{ name: "shell", arguments: { command: `touch ${marker}` } }], (body) => {
        offered = (body.tools ?? []).map((tool) => tool.function.name).sort();
      }),
      reply.text("The shell was refused.", (body) => {
        refused = JSON.parse(toolResults(body).shell ?? "{}");
      }),
      reply.text("Bob: the background task could not use the shell."),
    );
    const bobTexts = () =>
      telegram
        .callsOf("sendMessage")
        .filter((call) => !call.failed && String(call.body.chat_id) === String(READER_USER.id))
        .map((call) => String(call.body.text));
    telegram.pushMessage({
      chat: { id: READER_USER.id, type: "private" },
      from: READER_USER,
      text: "clean the build in the background",
    });
    await waitFor(
      () => bobTexts().includes("Bob: the background task could not use the shell."),
      "the follow-up turn in Bob's chat",
      20_000,
    );
    primary.assertDone();
    expect(spawned.tools).toEqual(["file_read", "spill_read"]);
    expect(offered).toEqual(["file_read", "spill_read"]);
    expect(refused).toMatchObject({ refused: true, error: { code: "tool.not_in_tool_set" } });
    expect(existsSync(marker)).toBe(false);
    const db = new Database(path.join(bot.dataDir, "magpie.db"), { readonly: true });
    try {
      expect(
        db.prepare("SELECT agent, verdict, error_code AS code FROM audit WHERE tool = 'shell'").all(),
      ).toEqual([{ agent: "reader", verdict: "deny", code: "tool.not_in_tool_set" }]);
    } finally {
      db.close();
    }
  });

  it("ask_question shows buttons; answered by a press, then by typing the option's number", async () => {
    const question = {
      prompt: "Deploy to which environment?",
      options: [
        { id: "prod", label: "Production" },
        { id: "stg", label: "Staging" },
      ],
    };
    const answers: unknown[] = [];
    primary.script(
      reply.toolCalls([{ name: "ask_question", arguments: question }]),
      reply.text(
        "deploying to staging",
        (body) => void answers.push(JSON.parse(toolResults(body).ask_question!)),
      ),
      reply.toolCalls([{ name: "ask_question", arguments: question }]),
      reply.text(
        "deploying to production",
        (body) => void answers.push(JSON.parse(toolResults(body).ask_question!)),
      ),
    );
    const asked = () => dmMessages(telegram).filter((message) => message.text.includes(question.prompt));
    say(telegram, "deploy it");
    const first = await waitFor(() => asked()[0], "the question", 20_000);
    expect(first.keyboard?.flat().map((button) => button.text)).toEqual(["Production", "Staging"]);
    press(telegram, first.keyboard![1]![0]!.callback_data);
    await waitFor(() => dmTexts(telegram).includes("deploying to staging"), "the first answer", 20_000);

    say(telegram, "deploy again");
    await waitFor(() => asked()[1], "the second question", 20_000);
    say(telegram, "1");
    await waitFor(() => dmTexts(telegram).includes("deploying to production"), "the second answer", 20_000);
    expect(answers).toEqual([
      { answer: "Staging", option_id: "stg" },
      { answer: "Production", option_id: "prod" },
    ]);
    primary.assertDone();
  });

  it("approvals: file_write waits for the owner; Approve button and /approve <id> let it run, Deny doesn't", async () => {
    const results: Array<Record<string, string>> = [];
    const writeAndReport = (file: string, answer: string) => [
      reply.toolCalls([{ name: "file_write", arguments: { path: file, content: `${file} body` } }]),
      reply.text(answer, (body) => void results.push(toolResults(body))),
    ];
    const prompts = () => dmMessages(telegram).filter((message) => message.text.includes("Approval needed"));
    const idOf = (text: string) => /request ([0-9a-f]+)/.exec(text)![1]!;
    primary.script(
      ...writeAndReport("by-button.txt", "written after the button"),
      ...writeAndReport("by-command.txt", "written after /approve"),
      ...writeAndReport("denied.txt", "not written, as you wish"),
    );

    say(telegram, "write by-button.txt");
    const first = await waitFor(() => prompts()[0], "the first approval prompt", 20_000);
    expect(first.text).toContain("file_write");
    expect(existsSync(path.join(bot.workspace, "by-button.txt"))).toBe(false);
    const approve = first.keyboard?.flat().find((button) => button.text === "Approve");
    press(telegram, approve!.callback_data);
    await waitFor(
      () => dmTexts(telegram).includes("written after the button"),
      "the first turn's end",
      20_000,
    );
    expect(readFileSync(path.join(bot.workspace, "by-button.txt"), "utf8")).toBe("by-button.txt body");

    say(telegram, "write by-command.txt");
    const second = await waitFor(() => prompts()[1], "the second approval prompt", 20_000);
    expect(await ask(telegram, `/approve ${idOf(second.text)}`, /^Approved: file_write/)).toContain(
      idOf(second.text),
    );
    await waitFor(
      () => dmTexts(telegram).includes("written after /approve"),
      "the second turn's end",
      20_000,
    );
    expect(readFileSync(path.join(bot.workspace, "by-command.txt"), "utf8")).toBe("by-command.txt body");

    say(telegram, "write denied.txt");
    const third = await waitFor(() => prompts()[2], "the third approval prompt", 20_000);
    const deny = third.keyboard?.flat().find((button) => button.text === "Deny");
    press(telegram, deny!.callback_data);
    await waitFor(
      () => dmTexts(telegram).includes("not written, as you wish"),
      "the third turn's end",
      20_000,
    );
    expect(existsSync(path.join(bot.workspace, "denied.txt"))).toBe(false);
    expect(JSON.parse(results[2]!.file_write!)).toMatchObject({
      ok: false,
      error: { code: "approval.denied" },
    });
    expect(results[0]!.file_write).toContain("by-button.txt");
    expect(results[1]!.file_write).toContain("by-command.txt");
    primary.assertDone();
  });

  it("memory with embeddings: memory_store indexes the fact, memory_recall and `magpie memory search` find it", async () => {
    const before = primary.embeddingRequests.length;
    let stored: Record<string, string> = {};
    let recalled: Record<string, string> = {};
    primary.script(
      reply.toolCalls([
        {
          name: "memory_store",
          arguments: { key: "owner.coffee", content: "The owner drinks flat whites." },
        },
      ]),
      reply.toolCalls(
        [{ name: "memory_recall", arguments: { query: "what coffee does the owner drink" } }],
        (body) => {
          stored = toolResults(body);
        },
      ),
      reply.text("You drink flat whites.", (body) => {
        recalled = toolResults(body);
      }),
    );
    await ask(telegram, "I only drink flat whites, remember that", /^You drink flat whites\.$/);
    expect(JSON.parse(stored.memory_store ?? "{}")).toMatchObject({
      ok: true,
      action: "created",
      indexed: "keyword+vector",
    });
    const recall = JSON.parse(recalled.memory_recall ?? "{}");
    expect(recall.mode).toBe("hybrid");
    expect(recall.results[0]).toMatchObject({
      key: "owner.coffee",
      content: "The owner drinks flat whites.",
    });
    const embeddings = primary.embeddingRequests.slice(before);
    expect(embeddings.every((request) => request.model === "embed-small")).toBe(true);
    expect(embeddings.flatMap((request) => request.input)).toEqual(
      expect.arrayContaining([
        expect.stringContaining("The owner drinks flat whites."),
        "what coffee does the owner drink",
      ]),
    );
    primary.assertDone();

    expect(await ask(telegram, "/memory flat whites")).toContain("owner.coffee");

    // `magpie memory search` on the same database: its own process embeds the query at the same endpoint.
    const cliBefore = primary.embeddingRequests.length;
    const search = await bot.cli(["memory", "search", "flat white coffee"]);
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toContain("owner.coffee");
    expect(search.stdout).toContain("The owner drinks flat whites.");
    expect(primary.embeddingRequests.slice(cliBefore)).toEqual([
      { model: "embed-small", input: ["flat white coffee"] },
    ]);
  });

  it("failover: the primary answers 500, the fallback's reply arrives with a 'via' line", async () => {
    primary.script(reply.error(500, "primary down"));
    primaryFailures += 1;
    fallback.script(reply.text("From the fallback."));
    const answer = await ask(telegram, "hello?", /^From the fallback/);
    expect(answer).toMatch(/^From the fallback\.\n\n.*via fb-model/);
    expect(fallback.requests.map((body) => body.model)).toEqual(["fb-model"]);
    primary.assertDone();
    fallback.assertDone();
  });

  it("a 400 from the primary does not fail over: one message naming the model and the status", async () => {
    const fallbackCalls = fallback.requests.length;
    primary.script(reply.error(400, "This model's maximum context length is 8192 tokens"));
    primaryFailures += 1;
    expect(await ask(telegram, "a very long question")).toBe(
      `The language model provider refused the request to "test-model" (400): This model's maximum context length is 8192 tokens`,
    );
    expect(fallback.requests).toHaveLength(fallbackCalls);
    primary.assertDone();
  });

  it("/status names the model and the channel; /model switches this chat to the fallback and back", async () => {
    const status = await ask(telegram, "/status", /^Magpie is up/);
    expect(status).toContain("Model: test-model; agent: main.");
    expect(status).toContain("Channels: telegram: connected.");

    expect(await ask(telegram, "/model fb-model")).toContain("now uses fb-model");
    fallback.script(reply.text("answered by the chosen model"));
    expect(await ask(telegram, "who answers?")).toBe("answered by the chosen model");
    expect(fallback.requests.at(-1)?.model).toBe("fb-model");
    expect(await ask(telegram, "/model reset")).toContain("back to the default model");
    primary.script(reply.text("the primary again"));
    expect(await ask(telegram, "and now?")).toBe("the primary again");
    primary.assertDone();
    fallback.assertDone();
  });

  it("/usage and `magpie usage` (plain and --json) report the same totals: every answered chat call, per model", async () => {
    const usage = await ask(telegram, "/usage", /^Usage today/);
    const json = await bot.cli(["usage", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    const summary = JSON.parse(json.stdout) as {
      totals: { calls: number; tokens: number; promptTokens: number; completionTokens: number };
      byModel: Array<{ model: string; kind: string; calls: number; tokens: number }>;
    };
    // The fakes answer every chat call with 10 prompt + 10 completion tokens; failed calls aren't billed.
    const chat = (model: string) => summary.byModel.find((row) => row.model === model && row.kind === "chat");
    expect(chat("test-model")).toMatchObject({
      calls: primary.requests.length - primaryFailures,
      tokens: 20 * (primary.requests.length - primaryFailures),
    });
    expect(chat("fb-model")).toMatchObject({
      calls: fallback.requests.length,
      tokens: 20 * fallback.requests.length,
    });
    const { calls, tokens } = summary.totals;
    expect(usage).toContain(`: ${calls} calls, ${tokens} tokens`);
    const plain = await bot.cli(["usage"]);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain(`: ${calls} calls, ${tokens} tokens`);
  });
});

describe("shipped build: streamed replies (the default), buttons on Discord and Slack, a per-turn budget", () => {
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let slack: FakeSlack;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    [telegram, discord, slack, llm] = await Promise.all([
      new FakeTelegram().start(),
      new FakeDiscord().start(),
      new FakeSlack().start(),
      startOpenAiFake(),
    ]);
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        // agent.streaming is left at its default (on), as users run it.
        budgets: { perTurn: { tokens: 30 } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id],
          },
          discord: { token: discord.validToken, apiBase: discord.apiBase, allowFrom: [DISCORD_USER.id] },
          slack: {
            botToken: slack.botToken,
            appToken: slack.appToken,
            apiUrl: slack.apiUrl,
            pacing: false,
            allowFrom: [SLACK_USER],
          },
        },
        security: { approvals: { require: ["file_write"], timeoutSecs: 60 } },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), discord?.close(), slack?.close(), llm?.close()]);
  });

  it("Discord: ask_question's buttons arrive as components and a press answers it", async () => {
    const MESSAGES = /^\/channels\/\d+\/messages$/;
    let answer: unknown;
    llm.script(
      reply.toolCalls([
        {
          name: "ask_question",
          arguments: {
            prompt: "Which backup?",
            options: [
              { id: "daily", label: "Daily" },
              { id: "weekly", label: "Weekly" },
            ],
          },
        },
      ]),
      reply.text("weekly it is", (body) => {
        answer = JSON.parse(toolResults(body).ask_question ?? "{}");
      }),
    );
    discord.sendMessage({ content: "back it up" });
    const asked = await waitFor(
      () =>
        discord.callsOf("POST", MESSAGES).find((call) => String(call.body.content).includes("Which backup?")),
      "the question",
      20_000,
    );
    const rows = asked.body.components as Array<{ components: Array<{ custom_id: string; label: string }> }>;
    const buttons = rows.flatMap((row) => row.components);
    expect(buttons.map((button) => button.label)).toEqual(["Daily", "Weekly"]);
    discord.pressButton(buttons[1]!.custom_id, "500000000000000999", DISCORD_DM_CHANNEL_ID);
    await waitFor(
      () => discord.callsOf("POST", MESSAGES).some((call) => call.body.content === "weekly it is"),
      "the answer",
      20_000,
    );
    expect(answer).toEqual({ answer: "Weekly", option_id: "weekly" });
    llm.assertDone();
  });

  it("Slack: an approval's Approve button (block_actions) lets file_write run", async () => {
    const posted = () => slack.callsOf("chat.postMessage").map((call) => call.body);
    llm.script(
      reply.toolCalls([
        { name: "file_write", arguments: { path: "from-slack.txt", content: "approved on Slack" } },
      ]),
      reply.text("written on Slack"),
    );
    slack.sendEnvelope(
      "events_api",
      slack.eventCallback({
        type: "message",
        channel: SLACK_DM,
        channel_type: "im",
        user: SLACK_USER,
        text: "write the file",
        ts: slack.nextTs(),
      }),
    );
    const prompt = await waitFor(
      () => posted().find((body) => String(body.text).includes("Approval needed")),
      "the approval prompt",
      20_000,
    );
    expect(existsSync(path.join(bot.workspace, "from-slack.txt"))).toBe(false);
    const blocks = (prompt.blocks as Array<{ type: string; elements?: Array<{ value: string }> }>) ?? [];
    const approve = blocks
      .filter((block) => block.type === "actions")
      .flatMap((block) => block.elements ?? [])
      .find((element) => element.value.startsWith("approve:"));
    slack.sendEnvelope("interactive", {
      type: "block_actions",
      team: { id: SLACK_TEAM },
      user: { id: SLACK_USER, name: "alice", username: "alice", team_id: SLACK_TEAM },
      api_app_id: "A0APP",
      token: "legacy",
      trigger_id: "trigger",
      container: { type: "message", message_ts: "1.0", channel_id: SLACK_DM },
      channel: { id: SLACK_DM, name: "directmessage" },
      message: { ts: "1700000000.000001", type: "message", text: "x" },
      actions: [
        {
          type: "button",
          action_id: "magpie-0-0",
          block_id: "magpie-row-0",
          value: approve!.value,
          action_ts: "1",
        },
      ],
    });
    await waitFor(() => posted().some((body) => body.text === "written on Slack"), "the turn's end", 20_000);
    expect(readFileSync(path.join(bot.workspace, "from-slack.txt"), "utf8")).toBe("approved on Slack");
    llm.assertDone();
  });

  it("a streamed reply shows a draft, which the final answer edits into the whole text", async () => {
    const answer =
      "The shed is at 21 degrees, the freezer at minus 18, and the greenhouse door is open again.";
    llm.script(reply.text(answer));
    say(telegram, "how is everything?");
    const final = await waitFor(
      () => telegram.callsOf("editMessageText").find((call) => !call.failed && call.body.text === answer),
      "the draft edited into the answer",
      20_000,
    );
    expect(llm.requests.at(-1)?.stream).toBe(true);
    const drafts = telegram.callsOf("sendMessage").filter((call) => !call.failed);
    expect(drafts).toHaveLength(1);
    const draft = String(drafts[0]?.body.text);
    expect(draft.endsWith(" …")).toBe(true);
    expect(answer.startsWith(draft.slice(0, -2))).toBe(true);
    expect(String(final.body.chat_id)).toBe(String(OWNER.id));
    expect(telegram.sentTexts()).not.toContain(answer);
    llm.assertDone();
  });

  it("the third call of a tool loop is not made; the next message starts from zero", async () => {
    const before = llm.requests.length;
    llm.script(
      reply.toolCalls([{ name: "file_list", arguments: {} }]),
      reply.toolCalls([{ name: "file_list", arguments: {} }]),
      reply.text("fresh turn"),
    );
    const refused = await ask(telegram, "list things", /Budget reached/);
    expect(refused).toContain("budgets.perTurn.tokens is 30 tokens per turn");
    expect(refused).toContain("40 tokens have been used in this turn");
    expect(llm.requests).toHaveLength(before + 2);
    expect(await ask(telegram, "again")).toBe("fresh turn");
    llm.assertDone();
  });
});
