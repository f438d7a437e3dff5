import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { hasWorkingSandbox } from "../helpers/requires.js";
import { type CliResult, runShippedCli, ShippedBot } from "../shipped/shipped-bot.js";
import { consoleTranscripts, type DocCommand, docCommands, docPages } from "./doc-pages.js";

/**
 * The docs can't drift from the CLI: every fenced `magpie …` command of README.md and docs/*.md (the rules are in
 * docs/README.md, "Commands in the docs are tested") runs through the built CLI — as `magpie` on the PATH, a
 * script running `node dist/bundle/main.js` — in `sh`, against a running Magpie (the Telegram and LLM fakes) or,
 * for the commands that need Magpie stopped, against a stopped one's config and data. Each must exit with the
 * status its page implies. Placeholders and the pages' example values are replaced from the table below; a
 * placeholder the table doesn't know fails the test.
 */

/** The Telegram user the pages' examples are about (`telegram:123456789:…`, `magpie pair revoke … 123456789`). */
const EXAMPLE_USER = 123456789;
/**
 * Sub-commands run against the stopped instance: `restore` refuses beside a running Magpie; `upgrade` would
 * replace the install the running Magpie was started from — this checkout — so here it must refuse cleanly
 * ("No Magpie is running", nothing changed), which checks its flags and config handling; test/upgrade/ runs real
 * upgrades on a throw-away install.
 */
const NEEDS_MAGPIE_STOPPED = new Set(["restore", "upgrade"]);
const SANDBOX = await hasWorkingSandbox();

describe("docs: every fenced magpie command runs as documented", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  let stopped: { dir: string; configFile: string; env: NodeJS.ProcessEnv };
  let bin: string;
  /** The inbox id and Telegram message id of an answered message from EXAMPLE_USER. */
  let traced: { inboxId: number; messageId: number };
  let strangers = 0;

  const dm = (user: number, text: string) =>
    telegram.pushMessage({ chat: { id: user, type: "private" }, from: { id: user }, text });

  /** A new stranger messages the bot; their pairing code. */
  async function freshPairingCode(user = 555_000 + ++strangers): Promise<string> {
    dm(user, "hi");
    const offer = await waitFor(
      () =>
        telegram
          .callsOf("sendMessage")
          .find(
            (call) =>
              String(call.body.chat_id) === String(user) && /pair approve/.test(String(call.body.text)),
          ),
      `a pairing code for ${user}`,
      15_000,
    );
    return /magpie pair approve telegram (\S+)/.exec(String(offer.body.text))![1]!;
  }

  /**
   * What a page's placeholder or example value stands for. Values are computed when a command needs them, so a
   * pairing code is fresh for each `magpie pair approve`.
   */
  const substitutions: Record<string, () => Promise<string> | string> = {
    K7QF2MZP: () => freshPairingCode(),
    "<code>": () => freshPairingCode(),
    "telegram:123456789:8812": () => `telegram:${EXAMPLE_USER}:${traced.messageId}`,
    "telegram:601:5000": () => `telegram:${EXAMPLE_USER}:${traced.messageId}`,
    "42": () => String(traced.inboxId),
    "/mnt/usb/": () => {
      mkdirSync(path.join(bot.dir, "usb"), { recursive: true });
      return `${path.join(bot.dir, "usb")}/`;
    },
    "<file>": () => path.join(stopped.dir, "backup.db"),
  };

  /** Replaces the example values (whole words) and placeholders in a command; throws on an unknown placeholder. */
  async function realCommand(command: DocCommand): Promise<string> {
    let text = command.command;
    for (const [example, value] of Object.entries(substitutions)) {
      // A word-like example (42, K7QF2MZP) is replaced only as a whole word, never inside another number.
      const before = /^\w/.test(example) ? "(?<!\\w)" : "";
      const after = /\w$/.test(example) ? "(?!\\w)" : "";
      // regex-dynamic: built from this file's own table, escaped
      const pattern = new RegExp(`${before}${example.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}${after}`, "g");
      if (pattern.test(text)) text = text.replace(pattern, await value());
    }
    const unknown = /<[a-z][\w -]*>/i.exec(text);
    if (unknown) {
      throw new Error(
        `${command.page}:${command.line}: "${command.command}" has the placeholder ${unknown[0]}, which ` +
          "test/docs/doc-commands.test.ts doesn't know — add it to `substitutions`",
      );
    }
    return text;
  }

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    const config = {
      llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
      agent: { streaming: false },
      timezone: "Europe/Berlin",
      channels: { telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false } },
      // Explicit, so doctor's sandbox line does not depend on the machine's probe.
      tools: { shell: { sandbox: SANDBOX ? "bwrap" : "off" } },
    };
    // The skill the pages approve (docs/tools-and-security.md's example, without its requirements).
    const skill =
      "---\nname: deploy-site\ndescription: Build the site and upload it with rsync\n---\n1. Run `npm run build`.\n";
    bot = await ShippedBot.start({ config, files: { "workspace/skills/deploy-site/SKILL.md": skill } });

    // `magpie` on the PATH, as after `npm link`: the built CLI (with the shipped tests' chunk recorder).
    bin = path.join(bot.dir, "bin");
    mkdirSync(bin);
    const quoted = [process.execPath, ...MAGPIE_NODE_ARGS].map((part) => `'${part}'`).join(" ");
    writeFileSync(path.join(bin, "magpie"), `#!/bin/sh\nexec ${quoted} "$@"\n`);
    chmodSync(path.join(bin, "magpie"), 0o755);

    // The pages' example user pairs, then asks something answered through a tool: what `magpie trace` shows.
    expect((await bot.cli(["pair", "approve", "telegram", await freshPairingCode(EXAMPLE_USER)])).code).toBe(
      0,
    );
    llm.script(
      reply.toolCalls([{ name: "file_list", arguments: { path: "." } }]),
      reply.text("The workspace is empty."),
    );
    const messageId = dm(EXAMPLE_USER, "what is in my workspace?");
    await waitFor(() => telegram.sentTexts().includes("The workspace is empty."), "the answer", 20_000);
    const last = await bot.cli(["trace", `telegram:${EXAMPLE_USER}:${messageId}`, "--json"]);
    traced = { inboxId: Number((JSON.parse(last.stdout) as { inboxId: number }).inboxId), messageId };
    expect(traced.inboxId).toBeGreaterThan(0);

    // A stopped Magpie beside it, with a database and a backup of it, for restore.
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-doc-stopped-"));
    const configFile = path.join(dir, "magpie.yaml");
    writeFileSync(
      configFile,
      JSON.stringify({ ...config, dataDir: path.join(dir, "data"), workspace: path.join(dir, "workspace") }),
    );
    mkdirSync(path.join(dir, "workspace"));
    stopped = { dir, configFile, env: { ...bot.environment(), HOME: dir } };
    const cli = (args: string[]) =>
      runShippedCli([...args, "--config", configFile], { cwd: dir, env: stopped.env });
    await cli(["doctor"]); // creates and migrates its database
    const backup = await cli(["backup", "--to", path.join(dir, "backup.db")]);
    expect(backup.code, backup.stderr).toBe(0);
  }, 90_000);

  afterAll(async () => {
    await bot?.dispose();
    if (stopped) rmSync(stopped.dir, { recursive: true, force: true });
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  /** Runs one documented line in `sh` with `magpie` on the PATH and MAGPIE_CONFIG naming the instance's config. */
  function runLine(line: string, subcommand: string): Promise<CliResult> {
    const target = NEEDS_MAGPIE_STOPPED.has(subcommand)
      ? { cwd: stopped.dir, env: stopped.env, config: stopped.configFile }
      : { cwd: bot.dir, env: bot.environment(), config: bot.configFile };
    return runShippedShell(line, {
      cwd: target.cwd,
      env: { ...target.env, MAGPIE_CONFIG: target.config, PATH: `${bin}:${target.env.PATH}` },
    });
  }

  const pages = docPages().map((page) => ({ page, commands: docCommands(page) }));

  it("finds the commands: the operations and troubleshooting pages show some, every one starts with magpie", () => {
    const counts = Object.fromEntries(pages.map(({ page, commands }) => [page, commands.length]));
    expect(counts["docs/operations.md"]).toBeGreaterThanOrEqual(5);
    expect(counts["docs/troubleshooting.md"]).toBeGreaterThanOrEqual(5);
    for (const { commands } of pages)
      for (const command of commands) expect(command.command).toMatch(/^magpie( |$)/);
  });

  it("a ```console transcript shows only sub-commands that a run block shows too", () => {
    const run = new Set(
      pages.flatMap(({ commands }) => commands.map((command) => subcommandOf(command.command))),
    );
    const transcripts = docPages().flatMap((page) => consoleTranscripts(page));
    expect(transcripts.length).toBeGreaterThan(0);
    for (const transcript of transcripts) {
      expect(run, `${transcript.page}:${transcript.line}: ${transcript.command}`).toContain(
        subcommandOf(transcript.command),
      );
    }
  });

  for (const { page, commands } of pages.filter((entry) => entry.commands.length > 0)) {
    it(`${page}: ${commands.length} command(s)`, async () => {
      const failures: string[] = [];
      for (const command of commands) {
        const line = await realCommand(command);
        const subcommand = line.split(/\s+/)[1] ?? "";
        const result = await runLine(line, subcommand);
        let expected = command.expectedStatus;
        // Without a working bubblewrap the sandbox line is ✗ and doctor exits 1 — for that reason only.
        if (subcommand === "doctor" && !SANDBOX && result.stdout.match(/^✗/gm)?.length === 1) {
          expect(result.stdout).toMatch(/^✗ sandbox/m);
          expected = 1;
        }
        if (subcommand === "upgrade") {
          expect(result.stderr, `${page}:${command.line}`).toMatch(
            /No Magpie is running[\s\S]*Nothing was changed/,
          );
          expected = 1;
        }
        if (result.code !== expected) {
          failures.push(
            `${page}:${command.line}: \`${command.command}\` (ran \`${line}\`) exited ${result.code}, ` +
              `the page implies ${expected}\n${result.stdout}${result.stderr}`,
          );
        }
      }
      expect(failures).toEqual([]);
    }, 120_000);
  }
});

/** `sh -c <line>`: the documented line exactly as a user would paste it. */
function runShippedShell(line: string, options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", line], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`sh -c ${line} did not finish; stdout: ${stdout}\nstderr: ${stderr}`));
    }, 60_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `magpie cron list --json` → "cron list": the command and its sub-command, without arguments. */
function subcommandOf(command: string): string {
  return command
    .split(/\s+/)
    .slice(1)
    .filter((word) => /^[a-z][a-z-]*$/.test(word))
    .slice(0, 2)
    .join(" ");
}
