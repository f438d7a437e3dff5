import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { hasPrograms } from "../helpers/requires.js";
import { type CliResult, runShippedCli, ShippedBot } from "./shipped-bot.js";

/**
 * What a stranger, a guest, a remote server or a model can put into what `magpie` prints: an OSC 52 clipboard
 * write, a clear screen, backspaces, the 8-bit CSI (U+009B), DEL and a right-to-left override.
 */
const HOSTILE = "\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\b\b\b\u009b31m\u007f\u202eevil";
/** The same, as `magpie` must print it. */
const REVEALED =
  "⟦U+001B⟧]52;c;cm0gLXJmIH4=⟦U+0007⟧⟦U+001B⟧[2J⟦U+0008⟧⟦U+0008⟧⟦U+0008⟧⟦U+009B⟧31m⟦U+007F⟧⟦U+202E⟧evil";
/** Anything a terminal acts on or hides: C0 but newline and tab, DEL, C1, line separators, format characters. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]|\p{Cf}/u;
/** printf's spelling of HOSTILE (U+009B as its UTF-8 bytes), for a cron command's output. */
const HOSTILE_PRINTF = "\\033]52;c;cm0gLXJmIH4=\\007\\033[2J\\b\\b\\b\\302\\23331m\\177\\342\\200\\256evil";

const OWNER = 801;
const STRANGER = 899;

describe("shipped build: nothing magpie prints can act on the terminal (attack)", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;
  let strangerMessage = 0;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", maxRetries: 0 },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        cron: {
          jobs: [
            {
              name: "remote-status",
              expression: "*/2 * * * * *",
              command: `printf '${HOSTILE_PRINTF}'`,
              deliver: { mode: "none" },
            },
          ],
        },
      },
      // A skill folder named by whoever could write to the workspace.
      files: { [`workspace/skills/${HOSTILE}/SKILL.md`]: "---\ndescription: a skill\n---\nDo it.\n" },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it("every human command shows the hostile text as ⟦U+XXXX⟧; --json keeps it exactly, escaped", async () => {
    // A stranger's display name (a pairing request), a guest's message, a tool name the model made up, its reply.
    strangerMessage = telegram.pushMessage({
      chat: { id: STRANGER, type: "private" },
      from: { id: STRANGER, first_name: HOSTILE },
      text: `let me in ${HOSTILE}`,
    });
    llm.script(
      reply.toolCalls([{ name: `made_up_${HOSTILE}`, arguments: {} }]),
      reply.text(`Done ${HOSTILE}`),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: `hi ${HOSTILE}`,
    });
    await waitFor(() => telegram.sentTexts().some((text) => text.startsWith("Done")), "the reply", 20_000);
    await waitFor(
      () => telegram.callsOf("sendMessage").some((call) => String(call.body.chat_id) === String(STRANGER)),
      "the pairing code sent to the stranger",
      20_000,
    );
    await waitFor(
      async () => (await bot.cli(["cron", "runs", "remote-status"])).stdout.includes(" ran "),
      "a run of the command job",
      20_000,
    );
    // A memory and a job as a model's tool (or the owner) would store them.
    expect((await bot.cli(["memory", "add", "hostile-note", `note ${HOSTILE}`])).code).toBe(0);
    expect(
      (await bot.cli(["cron", "add", "1h", `message: ${HOSTILE}`, "--name", `job ${HOSTILE}`])).code,
    ).toBe(0);
    // A config file with a key someone pasted in.
    const badConfig = path.join(bot.dir, "bad.yaml");
    writeFileSync(badConfig, JSON.stringify({ dataDir: bot.dataDir, [HOSTILE]: 1 }));

    const human: Array<{ args: string[]; shows: boolean; run?: () => Promise<CliResult> }> = [
      { args: ["pair", "list"], shows: true },
      { args: ["trace", "last"], shows: true },
      { args: ["trace", "--chat", `telegram:${OWNER}`], shows: true },
      { args: ["trace", "--chat", `telegram:${STRANGER}`], shows: false },
      { args: ["trace", `telegram:${STRANGER}:${strangerMessage}`], shows: false },
      { args: ["trace", HOSTILE], shows: true },
      { args: ["cron", "list"], shows: true },
      { args: ["cron", "runs", "remote-status"], shows: true },
      { args: ["memory", "list"], shows: true },
      { args: ["memory", "search", "note"], shows: true },
      { args: ["usage"], shows: false },
      { args: ["skills", "list"], shows: true },
      { args: ["config", "check"], shows: false },
      {
        args: ["config", "check", "--config", badConfig],
        shows: true,
        run: () =>
          runShippedCli(["config", "check", "--config", badConfig], { cwd: bot.dir, env: bot.environment() }),
      },
      { args: ["send", "telegram", HOSTILE, "hello"], shows: true },
      { args: ["reload"], shows: false },
      { args: ["doctor"], shows: true },
      { args: ["--bogus"], shows: false },
    ];
    // The LLM server offers only a model with a hostile name: doctor names what it offers.
    llm.models = [`model-${HOSTILE}`];
    // The platform refuses the send with a hostile description: `send` prints the platform's error.
    telegram.failNext("sendMessage", 400, `Bad Request: ${HOSTILE}`);
    // Four at a time: each is a process of its own.
    const results: CliResult[] = [];
    for (let index = 0; index < human.length; index += 4) {
      const batch = human.slice(index, index + 4);
      results.push(...(await Promise.all(batch.map((command) => command.run?.() ?? bot.cli(command.args)))));
    }
    human.forEach((command, index) => {
      const output = `${results[index]!.stdout}${results[index]!.stderr}`;
      const label = command.args.join(" ").replace(RAW, "?");
      expect(output.length, label).toBeGreaterThan(0);
      expect(
        output.match(RAW)?.[0],
        `${label}: a raw control character reached the terminal`,
      ).toBeUndefined();
      if (command.shows) expect(output, label).toContain(REVEALED);
    });

    // --json: no raw character either, and the value parses back exactly.
    const last = await bot.cli(["trace", "last", "--json"]);
    expect(last.stdout.match(RAW)).toBeNull();
    const traced = JSON.parse(last.stdout) as {
      text: string;
      turns: Array<{ steps: Array<{ tool?: string }> }>;
    };
    expect(traced.text).toBe(`hi ${HOSTILE}`);
    expect(traced.turns[0]!.steps.map((step) => step.tool).filter(Boolean)).toEqual([`made_up_${HOSTILE}`]);
    const exported = await bot.cli(["memory", "export"]);
    expect(exported.stdout.match(RAW)).toBeNull();
    expect(JSON.parse(exported.stdout.trim().split("\n")[0]!)).toMatchObject({ content: `note ${HOSTILE}` });
    const skills = await bot.cli(["skills", "list", "--json"]);
    expect(skills.stdout.match(RAW)).toBeNull();
    expect(JSON.parse(skills.stdout).skills.map((skill: { name: string }) => skill.name)).toContain(HOSTILE);
    for (const args of [
      ["trace", "--chat", `telegram:${OWNER}`, "--json"],
      ["trace", `telegram:${STRANGER}:${strangerMessage}`, "--json"],
      ["usage", "--json"],
    ]) {
      const result = await bot.cli(args);
      expect(result.code, args.join(" ")).toBe(0);
      expect(result.stdout.match(RAW), args.join(" ")).toBeNull();
      JSON.parse(result.stdout);
    }
  }, 120_000);
});

describe.runIf(hasPrograms("socat"))("shipped build: magpie start in a terminal (attack)", () => {
  it("pretty log lines show an LLM server's hostile error as ⟦U+XXXX⟧", async () => {
    const telegram = await new FakeTelegram().start();
    const llm = await startOpenAiFake();
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-tty-"));
    mkdirSync(path.join(dir, "workspace"));
    const configFile = path.join(dir, "magpie.yaml");
    writeFileSync(
      configFile,
      JSON.stringify({
        dataDir: path.join(dir, "data"),
        workspace: path.join(dir, "workspace"),
        http: { host: "127.0.0.1", port: 0 },
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model", maxRetries: 0 },
        agent: { streaming: false, retryOutageForSecs: 0 },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
      }),
    );
    // socat gives `magpie start` a terminal (a pty on stdin, stdout and stderr), as an owner running it by hand.
    const command = [process.execPath, ...MAGPIE_NODE_ARGS, "start", "--config", configFile].join(" ");
    const terminal = spawn("socat", ["-u", `EXEC:${command},pty,setsid,ctty,stderr`, "STDOUT"], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let screen = "";
    terminal.stdout.on("data", (chunk: Buffer) => {
      screen += chunk.toString();
    });
    const exited = new Promise((resolve) => terminal.once("exit", resolve));
    try {
      await waitFor(() => screen.includes("ready — health at"), "the ready line", 30_000);
      llm.script(reply.error(503, `upstream says ${HOSTILE}`));
      telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "hello" });
      await waitFor(
        () => screen.includes("llm-call-failed") && screen.includes("evil"),
        "the log line",
        30_000,
      );
    } finally {
      const pid = (() => {
        try {
          return (JSON.parse(readFileSync(path.join(dir, "data", "magpie.pid"), "utf8")) as { pid: number })
            .pid;
        } catch {
          return null;
        }
      })();
      if (pid) process.kill(pid, "SIGTERM");
      else terminal.kill("SIGTERM");
      await exited;
      await Promise.all([telegram.close(), llm.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
    // pino-pretty's own colours (SGR) and the pty's \r\n are all a terminal may act on.
    const acting = screen.replace(/\u001b\[[0-9;]*m/g, "").replace(/\r\n/g, "\n");
    expect(acting.match(RAW)?.[0], "a raw control character in the log").toBeUndefined();
    expect(screen).toContain(REVEALED);
  }, 90_000);
});
