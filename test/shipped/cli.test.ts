import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { hasWorkingSandbox } from "../helpers/requires.js";
import { runShippedCli, ShippedBot } from "./shipped-bot.js";

/**
 * The CLI sub-commands of the shipped build on a running bot's data: doctor, config check, backup, memory,
 * pair, send, --version, and an unknown command.
 */

const OWNER = 801;
const STRANGER = 802;
const SANDBOX = await hasWorkingSandbox();

describe("shipped build: the CLI on a running bot's data", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  let config: Record<string, unknown>;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    config = {
      llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
      agent: { streaming: false },
      channels: {
        telegram: {
          token: telegram.validToken,
          apiRoot: telegram.apiRoot,
          pacing: false,
          allowFrom: [OWNER],
          dmPolicy: "pairing",
        },
      },
      // Explicit, so doctor's sandbox line does not depend on the machine.
      tools: { shell: { sandbox: SANDBOX ? "bwrap" : "off" } },
    };
    bot = await ShippedBot.start({ config });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it("--version prints the package version; an unknown command prints the usage and exits 2", async () => {
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    const shown = await runShippedCli(["--version"], { cwd: bot.dir, env: bot.environment() });
    expect(shown).toMatchObject({ code: 0, stdout: `magpie ${version}\n` });
    const unknown = await bot.cli(["strat"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown command "strat"');
    expect(unknown.stderr).toContain("Usage: magpie [command]");
    expect(unknown.stdout).toBe("");
  });

  it("config check: 0 for the bot's config; 1 naming the key path of a typo", async () => {
    const ok = await bot.cli(["config", "check"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("Configuration is valid");
    const bad = path.join(bot.dir, "bad.yaml");
    writeFileSync(bad, JSON.stringify({ ...config, secuirty: { level: "high" } }));
    const refused = await runShippedCli(["config", "check", "--config", bad], {
      cwd: bot.dir,
      env: bot.environment(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("secuirty: unknown key — did you mean 'security'?");
  });

  it("doctor: ✓ for config, database, LLM, Telegram and the sandbox (exit 0); ✗ with the fix when the sandbox is off (exit 1)", async () => {
    const result = await bot.cli(["doctor"]);
    expect(result.stdout).toMatch(/^✓ config: /m);
    expect(result.stdout).toMatch(/^✓ database: .*magpie\.db \(wal, migrations applied\)/m);
    expect(result.stdout).toMatch(/^✓ llm: .* reachable \(model test-model\)/m);
    expect(result.stdout).toMatch(/^✓ telegram: authorized as @/m);
    if (SANDBOX) {
      expect(result.stdout).toMatch(/^✓ sandbox: bubblewrap sandbox active/m);
      expect(result.stdout).not.toMatch(/^✗/m);
      expect(result.code).toBe(0);
    }
    const off = path.join(bot.dir, "sandbox-off.yaml");
    writeFileSync(
      off,
      JSON.stringify({ ...config, dataDir: bot.dataDir, tools: { shell: { sandbox: "off" } } }),
    );
    const unsafe = await runShippedCli(["doctor", "--config", off], { cwd: bot.dir, env: bot.environment() });
    expect(unsafe.stdout).toMatch(
      /^✗ sandbox: .*tools\.shell\.sandbox is off — fix: set tools\.shell\.sandbox: auto$/m,
    );
    expect(unsafe.stdout).toMatch(/^✓ llm: /m);
    expect(unsafe.stdout).toMatch(/1 problem\(s\) found\./);
    expect(unsafe.code).toBe(1);
  });

  it("memory add, search, list, export and forget work on the bot's database", async () => {
    const added = await bot.cli([
      "memory",
      "add",
      "shed-wifi",
      "The shed Wi-Fi password is on the router label",
    ]);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^Added shed-wifi \(/);
    const search = await bot.cli(["memory", "search", "shed", "wifi", "password"]);
    expect(search.code).toBe(0);
    expect(search.stdout).toMatch(/^\d\.\d{4} {2}shed-wifi \[core\] {2}The shed Wi-Fi password/m);
    expect((await bot.cli(["memory", "list"])).stdout).toMatch(/shed-wifi \[core\] {2}The shed Wi-Fi/);
    const exported = (await bot.cli(["memory", "export"])).stdout.trim().split("\n");
    expect(exported.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        key: "shed-wifi",
        content: "The shed Wi-Fi password is on the router label",
        category: "core",
      }),
    ]);
    expect(await bot.cli(["memory", "forget", "shed-wifi"])).toMatchObject({
      code: 0,
      stdout: "Forgot shed-wifi.\n",
    });
    expect((await bot.cli(["memory", "list"])).stdout).toMatch(/^No memories for agent/);
    const again = await bot.cli(["memory", "forget", "shed-wifi"]);
    expect(again.code).toBe(1);
  });

  it("pair: a stranger gets a code, pair list shows it, pair approve lets them talk to the bot", async () => {
    telegram.pushMessage({
      chat: { id: STRANGER, type: "private" },
      from: { id: STRANGER, first_name: "Newbie" },
      text: "hi",
    });
    const offer = await waitFor(
      () =>
        telegram
          .callsOf("sendMessage")
          .find(
            (call) =>
              String(call.body.chat_id) === String(STRANGER) &&
              /magpie pair approve/.test(String(call.body.text)),
          ),
      "the pairing code",
      15_000,
    );
    // Until approved, the stranger reaches no model: the pairing code is all they get.
    expect(llm.requests).toHaveLength(0);
    expect(
      telegram.callsOf("sendMessage").filter((call) => String(call.body.chat_id) === String(STRANGER)),
    ).toHaveLength(1);
    const code = /magpie pair approve telegram (\S+)/.exec(String(offer.body.text))?.[1];
    expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    const pending = await bot.cli(["pair", "list"]);
    expect(pending.stdout).toMatch(
      new RegExp(`^ {2}${code} {2}telegram {2}user ${STRANGER} \\(Newbie\\)`, "m"),
    );
    const approved = await bot.cli(["pair", "approve", "telegram", code!]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`Approved telegram user ${STRANGER}`);
    expect((await bot.cli(["pair", "list", "telegram"])).stdout).toMatch(
      new RegExp(`Approved senders:\\n {2}telegram {2}user ${STRANGER} .* by cli`),
    );
    llm.script(reply.text("Welcome aboard."));
    telegram.pushMessage({
      chat: { id: STRANGER, type: "private" },
      from: { id: STRANGER, first_name: "Newbie" },
      text: "hello again",
    });
    await waitFor(() => telegram.sentTexts().includes("Welcome aboard."), "the paired user's answer", 15_000);
    llm.assertDone();
    expect((await bot.cli(["pair", "approve", "telegram", "ZZZZZZZZ"])).code).toBe(1);
  });

  it("send telegram <chatId> <text>: the running bot delivers it to the chat", async () => {
    const sent = await bot.cli(["send", "telegram", String(OWNER), "disk", "is", "fine"]);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    expect(sent.stdout).toMatch(new RegExp(`✓ Sent to telegram:${OWNER} \\(message \\w+\\)`));
    const call = await waitFor(
      () =>
        telegram.callsOf("sendMessage").find((entry) => !entry.failed && entry.body.text === "disk is fine"),
      "the message in Telegram",
    );
    expect(String(call.body.chat_id)).toBe(String(OWNER));
  });

  it("backup --to <file>: a valid SQLite database with the bot's tables, taken while it runs", async () => {
    const target = path.join(bot.dir, "copy.db");
    const result = await bot.cli(["backup", "--to", target]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/✓ Backed up the database to .*copy\.db \(\d+\.\d MiB, \d+ ms\)/);
    const copy = new Database(target, { readonly: true });
    try {
      expect(copy.pragma("integrity_check", { simple: true })).toBe("ok");
      const tables = (
        copy.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>
      ).map((row) => row.name);
      expect(tables).toEqual(
        expect.arrayContaining(["messages", "memories", "cron_jobs", "cron_runs", "audit", "kv"]),
      );
      // What the bot had written by now is in the copy: the answered messages.
      expect(copy.prepare("SELECT COUNT(*) AS n FROM messages").get()).toMatchObject({
        n: expect.any(Number),
      });
      expect((copy.prepare("SELECT COUNT(*) AS n FROM messages").get() as { n: number }).n).toBeGreaterThan(
        0,
      );
    } finally {
      copy.close();
    }
  });
});
