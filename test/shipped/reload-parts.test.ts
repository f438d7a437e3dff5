import { readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { DISCORD_USER, FakeDiscord } from "../fakes/discord.js";
import { waitFor } from "../fakes/http-util.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { EVERYTHING } from "../mcp/mcp-helpers.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The parts a reload takes over, through the shipped build: the config file is rewritten and the running Magpie gets
 * SIGHUP — a new cron job shows in `magpie cron list`, a new webhook trigger fires, a new Discord channel answers (and is in /readyz), a removed
 * MCP server is gone from `/mcp` and its process exits, and a removed channel's route is quiet. No LLM: slash
 * commands and the no-model notice are the answers.
 */

const OWNER = { id: 601, first_name: "Alice" };
const HOOK_SECRET = "h".repeat(32);

describe("shipped build: reload applies cron jobs, channels and MCP servers", () => {
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let bot: ShippedBot;
  let base: Record<string, unknown>;

  const telegramSection = () => ({
    token: telegram.validToken,
    apiRoot: telegram.apiRoot,
    pacing: false,
    allowFrom: [OWNER.id],
  });
  const save = (content: Record<string, unknown>) => {
    writeFileSync(`${bot.configFile}.tmp`, JSON.stringify({ ...base, ...content }, null, 2));
    renameSync(`${bot.configFile}.tmp`, bot.configFile);
  };
  const pid = () =>
    (JSON.parse(readFileSync(path.join(bot.dataDir, "magpie.pid"), "utf8")) as { pid: number }).pid;
  const ownerTexts = () =>
    telegram
      .callsOf("sendMessage")
      .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
      .map((call) => String(call.body.text));
  /** Sends `/mcp` from the owner and returns the answer. */
  const mcpStatus = async () => {
    const before = ownerTexts().length;
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "/mcp" });
    await waitFor(() => ownerTexts().length > before, "the /mcp answer", 20_000);
    return ownerTexts()[before]!;
  };
  /** Processes running this bot's MCP server (its command line names server-everything and the bot's HOME). */
  const everythingProcesses = () =>
    readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry))
      .filter((entry) => {
        try {
          const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
          const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
          return commandLine.includes(EVERYTHING) && environ.includes(`HOME=${bot.dir}`);
        } catch {
          return false;
        }
      });
  /** A signed `POST /hooks/<name>`; returns the status. */
  const hook = async (name: string, body: string) => {
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${bot.url}/hooks/${name}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(HOOK_SECRET, timestamp, body),
      },
      body,
    });
    return response.status;
  };
  const alive = (processId: number) => {
    try {
      process.kill(processId, 0);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    [telegram, discord] = await Promise.all([new FakeTelegram().start(), new FakeDiscord().start()]);
    bot = await ShippedBot.start({
      config: {
        channels: { telegram: telegramSection() },
        mcpServers: { every: { command: process.execPath, args: [EVERYTHING, "stdio"], timeoutSecs: 20 } },
      },
    });
    base = JSON.parse(readFileSync(bot.configFile, "utf8")) as Record<string, unknown>;
    await waitFor(
      async () => /every \(stdio\): ready/.test(await mcpStatus()),
      "the MCP server ready",
      30_000,
    );
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), discord?.close()]);
  });

  it("SIGHUP after a rewrite: the new job is listed, the new trigger fires, the new channel answers, the removed MCP server is gone", async () => {
    expect(everythingProcesses()).toHaveLength(1);
    const cronBefore = await bot.cli(["cron", "list"]);
    expect(cronBefore.stdout).not.toContain("nightly-report");
    expect(await hook("deployed", '{"repo":"before"}')).toBe(404);
    const reloads = bot.logsOf("config-reloaded").length;

    save({
      channels: {
        telegram: telegramSection(),
        discord: { token: discord.validToken, apiBase: discord.apiBase, allowFrom: [DISCORD_USER.id] },
      },
      mcpServers: {},
      triggers: {
        deployed: {
          on: { webhook: { secret: HOOK_SECRET } },
          do: { message: "Deployed {{event.payload.repo}}." },
          deliver: { channel: "telegram", chat_id: OWNER.id },
        },
      },
      cron: {
        jobs: [
          {
            name: "nightly-report",
            expression: "0 3 * * *",
            message: "Good night.",
            deliver: { channel: "telegram", chatId: OWNER.id },
          },
        ],
      },
    });
    process.kill(pid(), "SIGHUP");
    const reloaded = await waitFor(
      () =>
        bot
          .logsOf("config-reloaded")
          .slice(reloads)
          .find((entry) => (entry.applied as string[]).some((key) => key.startsWith("channels.discord."))),
      "the reload",
      30_000,
    );
    expect(reloaded).toMatchObject({ failures: [] });
    expect(reloaded.applied).toEqual(
      expect.arrayContaining(["cron.jobs", "mcpServers.every", "triggers.deployed"]),
    );

    // The new trigger's webhook answers and its message reaches the owner.
    expect(await hook("deployed", '{"repo":"magpie"}')).toBe(202);
    await waitFor(() => ownerTexts().includes("Deployed magpie."), "the trigger's message", 20_000);

    // The cron job from the file, through the built CLI.
    const cron = await bot.cli(["cron", "list"]);
    expect(cron.code).toBe(0);
    expect(cron.stdout).toContain("nightly-report");
    expect(cron.stdout).toContain("0 3 * * *");

    // The new channel is connected and answers an allowed user.
    const ready = (await (await fetch(`${bot.url}/readyz`)).json()) as {
      channels: Record<string, { state: string }>;
    };
    expect(ready.channels).toMatchObject({
      telegram: { state: "connected" },
      discord: { state: "connected" },
    });
    discord.sendMessage({ content: "hello after the reload" });
    const [answer] = await waitFor(
      () => {
        const sent = discord.callsOf("POST", /^\/channels\/\d+\/messages$/);
        return sent.length > 0 && sent;
      },
      "the Discord answer",
      20_000,
    );
    expect(JSON.stringify(answer!.body)).toContain("No language model is configured");

    // The MCP server is stopped: /mcp has none, its process is gone.
    expect(await mcpStatus()).toContain("No MCP servers are configured");
    expect(bot.logsOf("mcp-reloaded")).toContainEqual(expect.objectContaining({ stopped: ["every"] }));
    await waitFor(() => everythingProcesses().length === 0, "the MCP server's process to exit", 10_000);
  }, 90_000);

  it("removing the channel again stops it: it leaves /readyz and no longer answers", async () => {
    const reloads = bot.logsOf("config-reloaded").length;
    save({ channels: { telegram: telegramSection() }, mcpServers: {} });
    process.kill(pid(), "SIGHUP");
    await waitFor(
      () =>
        bot
          .logsOf("config-reloaded")
          .slice(reloads)
          .some((entry) => (entry.applied as string[]).some((key) => key.startsWith("channels.discord."))),
      "the reload",
      30_000,
    );
    const ready = (await (await fetch(`${bot.url}/readyz`)).json()) as { channels: Record<string, unknown> };
    expect(Object.keys(ready.channels)).toEqual(["telegram"]);
    const answered = discord.callsOf("POST", /^\/channels\/\d+\/messages$/).length;
    discord.sendMessage({ content: "still there?" });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(discord.callsOf("POST", /^\/channels\/\d+\/messages$/)).toHaveLength(answered);
    expect(alive(pid())).toBe(true);
  }, 60_000);
});
