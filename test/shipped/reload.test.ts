import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { runShippedCli, ShippedBot } from "./shipped-bot.js";

/**
 * Reload without a restart through the shipped build: `magpie reload` prints what the running Magpie applied and
 * what needs a restart; an invalid file is refused by the command without signalling; and under a burst of 100
 * messages from 100 allowed users the config is rewritten several times — a saved file, SIGHUP, `magpie reload`
 * and an invalid file in the middle (nothing changes, the owner is told) — and every message is answered exactly
 * once.
 */

const OWNER = { id: 501, first_name: "Alice" };
const USERS = Array.from({ length: 100 }, (_, index) => 1001 + index);
const BRAVE_SECRET = "brave-key-RELOADED-5551234567";
const ENV_SECRET = "tok-from-env-1234567890";

describe("shipped build: reload without a restart", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  /** The config file as first written (dataDir, workspace, http filled in by ShippedBot). */
  let base: Record<string, unknown>;

  const config = (agent: Record<string, unknown>, rest: Record<string, unknown> = {}) => ({
    ...base,
    agent: { streaming: false, ...agent },
    ...rest,
  });
  const telegramSection = (extraUsers: number[] = []) => ({
    token: telegram.validToken,
    apiRoot: telegram.apiRoot,
    pacing: false,
    allowFrom: [OWNER.id, ...USERS, ...extraUsers],
  });
  /** Saves the config file the way editors do: a new file renamed over the old one. */
  const save = (content: unknown) => {
    const text = typeof content === "string" ? content : JSON.stringify(content, null, 2);
    writeFileSync(`${bot.configFile}.tmp`, text);
    renameSync(`${bot.configFile}.tmp`, bot.configFile);
  };
  const pid = () =>
    (JSON.parse(readFileSync(path.join(bot.dataDir, "magpie.pid"), "utf8")) as { pid: number }).pid;
  const ownerTexts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
      .map((call) => String(call.body.text));

  beforeAll(async () => {
    [telegram, llm] = await Promise.all([new FakeTelegram().start(), startOpenAiFake()]);
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", maxRetries: 0 },
        agent: { streaming: false, systemPrompt: "Prompt v0." },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id, ...USERS],
          },
        },
      },
    });
    base = JSON.parse(readFileSync(bot.configFile, "utf8")) as Record<string, unknown>;
    // The owner has a DM with the bot: that is where a broken config is reported.
    llm.script(reply.text("Hello Alice."));
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "hi" });
    await waitFor(() => ownerTexts().includes("Hello Alice."), "the owner's greeting answered", 20_000);
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it("magpie reload with no Magpie running says so (exit 1); an unknown flag prints the usage (exit 2)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-reload-none-"));
    try {
      writeFileSync(path.join(dir, "magpie.yaml"), JSON.stringify({ dataDir: path.join(dir, "data") }));
      const options = { cwd: dir, env: { PATH: process.env.PATH, HOME: dir } };
      const none = await runShippedCli(["reload", "--config", path.join(dir, "magpie.yaml")], options);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(`No Magpie is running on ${path.join(dir, "data")}`);
      const unknown = await runShippedCli(["reload", "--now"], options);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toContain("Usage: magpie reload");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("magpie reload prints the applied keys and those that need a restart; the next turn uses the new prompt", async () => {
    save(
      config(
        { systemPrompt: "Prompt v1." },
        { http: { ...(base.http as object), port: 18_787 }, channels: { telegram: telegramSection() } },
      ),
    );
    const result = await bot.cli(["reload"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`✓ Magpie (pid ${pid()}) reloaded ${bot.configFile}:`);
    // The watcher may have applied the saved file before the signal came: either way, the output says so.
    expect(result.stdout).toMatch(/^ {2}applied( when the file was saved)?: agent\.systemPrompt$/m);
    expect(result.stdout).toContain("  needs a restart: http.port (still 0)\n");

    llm.script(reply.text("Answered with v1."));
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "which prompt?" });
    await waitFor(() => ownerTexts().includes("Answered with v1."), "the answer after the reload", 20_000);
    const system = String(llm.requests.at(-1)!.messages[0]!.content);
    expect(system).toContain("Prompt v1.");
    expect(system).not.toContain("Prompt v0.");
    expect(bot.logsOf("config-reloaded")).toContainEqual(
      expect.objectContaining({ applied: ["agent.systemPrompt"], needsRestart: ["http.port"], failures: [] }),
    );
  }, 60_000);

  it("an invalid file: magpie reload names the key path, exits 1 and does not signal", async () => {
    const requests = bot.logsOf("config-reload-requested").length;
    save(
      config(
        { systemPrompt: "Prompt v1.", maxIterations: "lots" },
        { channels: { telegram: telegramSection() } },
      ),
    );
    const result = await bot.cli(["reload"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("agent.maxIterations: expected number");
    expect(result.stdout).toBe("");
    // The file watcher sees the broken file too (and tells the owner); the command itself sent no signal.
    await waitFor(() => bot.logsOf("config-reload-invalid").length > 0, "the watcher's verdict", 10_000);
    expect(bot.logsOf("config-reload-requested")).toHaveLength(requests);
    save(config({ systemPrompt: "Prompt v1." }, { channels: { telegram: telegramSection() } }));
    await waitFor(() => bot.logsOf("config-reloaded").length >= 2, "the fixed file reloaded", 10_000);
  }, 60_000);

  it("a bad trigger predicate makes the whole file invalid: nothing of it is applied", async () => {
    const invalid = bot.logsOf("config-reload-invalid").length;
    const applied = bot.logsOf("config-reloaded").length;
    const trigger = (when: string) => ({
      triggers: {
        hot: {
          on: { webhook: { secret: "w".repeat(32) } },
          when,
          do: { message: "hot" },
          deliver: { channel: "telegram", chat_id: String(OWNER.id) },
        },
      },
    });
    save(
      config(
        { systemPrompt: "Prompt v2." },
        { channels: { telegram: telegramSection() }, ...trigger("event.payload.temperature >") },
      ),
    );
    const result = await bot.cli(["reload"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/triggers\.hot\.when: /);
    await waitFor(
      () => bot.logsOf("config-reload-invalid").length > invalid,
      "the watcher's verdict on the bad predicate",
      10_000,
    );
    const verdict = bot.logsOf("config-reload-invalid").at(-1)!;
    expect(String((verdict.problems as string[])[0])).toMatch(/^triggers\.hot\.when: /);
    // The prompt change beside it was not applied either.
    expect(bot.logsOf("config-reloaded")).toHaveLength(applied);
    save(config({ systemPrompt: "Prompt v1." }, { channels: { telegram: telegramSection() } }));
    await waitFor(() => bot.logsOf("config-reloaded").length > applied, "the fixed file reloaded", 10_000);
  }, 60_000);

  it("a changed .env is read again: a value it holds reaches the next turn", async () => {
    const reloads = () => bot.logsOf("config-reloaded");
    const saved = (after: number, what: string) => waitFor(() => reloads().length > after, what, 10_000);
    let count = reloads().length;
    save(
      config(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's own ${VAR} interpolation
        { systemPrompt: "${MAGPIE_TEST_PROMPT:-Prompt v1.}" },
        { channels: { telegram: telegramSection() } },
      ),
    );
    await saved(count, "the file referring to .env reloaded");
    count = reloads().length;
    // No .env at start-up: created now, it is watched all the same.
    writeFileSync(
      path.join(bot.dir, ".env"),
      `MAGPIE_TEST_PROMPT=Prompt from .env.\nDEMO_API_TOKEN=${ENV_SECRET}\n`,
    );
    await saved(count, "the new .env reloaded");
    // The new .env is also Magpie's state from now on (hidden from the agent like the first).
    expect(reloads().at(-1)).toMatchObject({ applied: ["agent.systemPrompt", "envFiles"] });
    llm.script(reply.text("Answered from .env."));
    // The owner pastes the new token by mistake: the model never sees it.
    telegram.pushMessage({
      chat: { id: OWNER.id, type: "private" },
      from: OWNER,
      text: `and now? ${ENV_SECRET}`,
    });
    await waitFor(() => ownerTexts().includes("Answered from .env."), "the answer", 20_000);
    const request = llm.requests.at(-1)!;
    expect(String(request.messages[0]!.content)).toContain("Prompt from .env.");
    expect(JSON.stringify(request)).not.toContain(ENV_SECRET);
    expect(String(request.messages.at(-1)!.content)).toContain("and now? [REDACTED]");
    count = reloads().length;
    save(config({ systemPrompt: "Prompt v1." }, { channels: { telegram: telegramSection() } }));
    await saved(count, "back to the plain prompt");
  }, 60_000);

  it("100 messages during a saved file, SIGHUP, magpie reload and an invalid file: each answered exactly once", async () => {
    const told = ownerTexts().filter((text) => text.includes("invalid")).length;
    const reloadsBefore = bot.logsOf("config-reloaded").length;
    llm.script(...Array.from({ length: USERS.length }, () => reply.text("ok")));
    let sent = 0;
    const pump = (async () => {
      for (const user of USERS) {
        telegram.pushMessage({
          chat: { id: user, type: "private" },
          from: { id: user, first_name: `U${user}` },
          text: `message from ${user}`,
        });
        sent++;
        // 100 messages over about four seconds.
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    })();
    const reloadsDone = (count: number, what: string) =>
      waitFor(() => bot.logsOf("config-reloaded").length >= reloadsBefore + count, what, 20_000);

    // 1. A saved file: an extra allowed user, a new prompt.
    await waitFor(() => sent >= 10, "the burst under way", 10_000);
    save(config({ systemPrompt: "Prompt v2." }, { channels: { telegram: telegramSection([9999]) } }));
    await reloadsDone(1, "the saved file applied");
    // 2. SIGHUP after a change of budgets, approvals and a secret.
    save(
      config(
        { systemPrompt: "Prompt v2." },
        {
          channels: { telegram: telegramSection([9999]) },
          budgets: { daily: { tokens: 10_000_000 } },
          security: { approvals: { require: ["file_write"] } },
          tools: { web: { braveApiKey: BRAVE_SECRET } },
        },
      ),
    );
    process.kill(pid(), "SIGHUP");
    await reloadsDone(2, "the SIGHUP reload");
    const sentBySighup = sent;
    // 3. An invalid file: nothing changes, the owner is told.
    save(
      config(
        { systemPrompt: "Prompt v2.", historyTokens: -5 },
        { channels: { telegram: telegramSection() } },
      ),
    );
    await waitFor(
      () => ownerTexts().filter((text) => text.includes("invalid")).length > told,
      "the owner told about the invalid file",
      20_000,
    );
    // 4. magpie reload of a valid file: the extra user and the approvals go again.
    save(config({ systemPrompt: "Prompt v3." }, { channels: { telegram: telegramSection() } }));
    const command = await bot.cli(["reload"]);
    expect(command.code, command.stderr).toBe(0);
    expect(command.stdout).toMatch(/applied( when the file was saved)?: .*agent\.systemPrompt/);
    await pump;
    // The reloads happened while messages kept coming.
    expect(sentBySighup).toBeLessThan(USERS.length);

    const answersPerChat = () => {
      const counts = new Map<string, number>();
      for (const call of telegram.callsOf("sendMessage")) {
        if (call.failed) continue;
        const chat = String(call.body.chat_id);
        counts.set(chat, (counts.get(chat) ?? 0) + 1);
      }
      return counts;
    };
    await waitFor(
      () => USERS.every((user) => answersPerChat().has(String(user))),
      "an answer in each of the 100 chats",
      60_000,
    );
    // A moment more for any second answer to show up.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const counts = answersPerChat();
    expect(USERS.filter((user) => counts.get(String(user)) !== 1)).toEqual([]);
    expect(llm.errors).toEqual([]);

    // The owner heard of the broken file once; it changed nothing (v2 stayed until v3).
    const alert = ownerTexts()
      .filter((text) => text.includes("invalid"))
      .at(-1)!;
    expect(alert).toContain("agent.historyTokens");
    const invalid = bot.logsOf("config-reload-invalid").at(-1)!;
    expect(String((invalid.problems as string[])[0])).toMatch(/^agent\.historyTokens: /);
    // The diff is logged as key paths; the new secret never reaches the log.
    const reloaded = bot.logsOf("config-reloaded").slice(reloadsBefore);
    expect(reloaded.length).toBeGreaterThanOrEqual(3);
    expect(reloaded.flatMap((line) => line.applied as string[])).toContain("tools.web.braveApiKey");
    expect(bot.logLines.join("\n")).not.toContain(BRAVE_SECRET);
    expect(reloaded.every((line) => (line.failures as unknown[]).length === 0)).toBe(true);
    // The process never restarted: one pid, one magpie-ready.
    expect(bot.logsOf("magpie-ready")).toHaveLength(1);
  }, 120_000);
});
