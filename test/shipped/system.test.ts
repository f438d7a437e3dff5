import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { type PtyDevice, startPtyDevice } from "../hardware/pty-device.js";
import { hasPrograms, hasWorkingSandbox } from "../helpers/requires.js";
import { EVERYTHING } from "../mcp/mcp-helpers.js";
import { ShippedBot } from "./shipped-bot.js";
import { toolResults } from "./tool-results.js";

/**
 * The system tools through the shipped build: the sandboxed shell, git_operations (commit approved with the
 * Telegram button), skills and /skills, MCP over stdio and streamable HTTP and /mcp, and serial over a real PTY —
 * each driven by a Telegram message and a scripted model, asserted on what the model saw and what is on disk.
 */

const OWNER = 601;
const DM = { id: OWNER, type: "private" as const };
/** In the bot's .env, next to its config: the sandboxed shell must not be able to read it. */
const ENV_CANARY = "shedcanary8Hq2Zx4";
const SANDBOX = await hasWorkingSandbox();
const SERIAL = hasPrograms("socat");

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The tool messages of this turn (after the last user message), parsed, in order. */
function turnToolResults(body: ChatRequestBody | null): Array<Record<string, unknown>> {
  const messages = body?.messages ?? [];
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  return messages
    .slice(lastUser + 1)
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as Record<string, unknown>);
}

/** The tool results of the last request the model got (by tool name), filled in by the final scripted reply. */
function capture(): { seen: Record<string, string>; body: ChatRequestBody | null } {
  return { seen: {}, body: null };
}

describe("shipped build: shell, git, skills, MCP and serial through Telegram", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let httpMcp: ChildProcess;
  let device: PtyDevice | null = null;
  let bot: ShippedBot;

  const pressed = new Set<string>();
  /** Approval requests the owner was sent so far (approvals.require holds risk:high), by their text. */
  const approvalsAsked: string[] = [];

  /** Taps Approve, as the owner, on every approval request not yet answered. */
  const approvePending = () => {
    for (const call of telegram.callsOf("sendMessage")) {
      const markup = call.body.reply_markup;
      if (!markup) continue;
      const keyboard = (typeof markup === "string" ? JSON.parse(markup) : markup) as {
        inline_keyboard?: Array<Array<{ callback_data?: string }>>;
      };
      const approve = keyboard.inline_keyboard
        ?.flat()
        .find((button) => button.callback_data?.startsWith("approve:"))?.callback_data;
      if (!approve || pressed.has(approve)) continue;
      pressed.add(approve);
      approvalsAsked.push(String(call.body.text));
      telegram.pushUpdate({
        callback_query: {
          id: `cb-${pressed.size}`,
          from: { id: OWNER, is_bot: false, first_name: "Owner" },
          chat_instance: "1",
          data: approve,
          message: {
            message_id: 9_000 + pressed.size,
            date: Math.floor(Date.now() / 1000),
            chat: DM,
            text: "…",
          },
        },
      });
    }
  };

  /** Sends `text` as the owner and waits for `answer`, approving what the turn asks for on the way. */
  const ask = async (text: string, answer: string) => {
    telegram.pushMessage({ chat: DM, from: { id: OWNER }, text });
    await waitFor(
      () => {
        approvePending();
        return telegram.sentTexts().includes(answer);
      },
      `the reply "${answer}"`,
      20_000,
    );
  };

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    const port = await freePort();
    httpMcp = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
      env: { PATH: process.env.PATH, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let mcpLog = "";
    httpMcp.stderr?.on("data", (chunk) => (mcpLog += chunk));
    await waitFor(() => mcpLog.includes("listening on port"), "the HTTP MCP server");
    if (SERIAL) device = await startPtyDevice();
    bot = await ShippedBot.start({
      config: {
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
        tools: { shell: { sandbox: SANDBOX ? "bwrap" : "off" } },
        // The owner approves each high-risk call (shell, a git commit, MCP tools) with the Telegram button.
        security: { approvals: { require: ["risk:high"], timeoutSecs: 30 } },
        mcpServers: {
          every: { command: process.execPath, args: [EVERYTHING, "stdio"], timeoutSecs: 20 },
          web: { url: `http://127.0.0.1:${port}/mcp`, tools: { allow: ["echo", "get-sum"] } },
        },
        ...(device
          ? { hardware: { boards: [{ name: "uno", type: "arduino-uno", port: device.port }] } }
          : {}),
      },
      files: {
        ".env": `SHED_NOTE=${ENV_CANARY}\n`,
        "workspace/skills/deploy/SKILL.md":
          "---\nname: deploy\ndescription: Deploy the site with rsync\n---\n# deploy\n\nRun rsync -av site/ shed:/srv/.\n",
      },
    });
    await waitFor(() => bot.logsOf("mcp-server-ready").length === 2, "both MCP servers", 20_000);
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    httpMcp?.kill("SIGKILL");
    await device?.stop();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it.runIf(SANDBOX)(
    "the shell runs in bubblewrap: the workspace is writable, the config and .env are hidden",
    async () => {
      const seen = capture();
      llm.script(
        reply.toolCalls([
          {
            name: "shell",
            // What a prompt-injected model would try: Magpie's own config and .env, plain and reversed.
            arguments: {
              command: `echo made > made.txt; cat made.txt; cat ${bot.configFile} ${bot.dir}/.env; rev ${bot.dir}/.env; ls -a "$HOME"`,
            },
          },
        ]),
        reply.text("Shell done.", (body) => {
          seen.seen = toolResults(body);
        }),
      );
      const asked = approvalsAsked.length;
      await ask("look around", "Shell done.");
      expect(approvalsAsked.slice(asked)).toEqual([expect.stringContaining("shell")]);
      const result = JSON.parse(seen.seen.shell ?? "{}") as { stdout: string; stderr: string };
      expect(result.stdout).toContain("made");
      expect(execFileSync("cat", [`${bot.workspace}/made.txt`], { encoding: "utf8" })).toBe("made\n");
      const everything = JSON.stringify(llm.requests);
      expect(everything).not.toContain(ENV_CANARY);
      expect(everything).not.toContain([...ENV_CANARY].reverse().join(""));
      expect(everything).not.toContain('"sk-test"');
      llm.assertDone();
    },
  );

  it("git_operations: status, add, and a commit the owner approves with the Telegram button", async () => {
    const repo = path.join(bot.workspace, "repo");
    const git = (...args: string[]) => execFileSync("git", args, { cwd: repo, encoding: "utf8" });
    mkdirSync(repo);
    git("init", "-q", "-b", "main");
    git("config", "user.email", "magpie@test.invalid");
    git("config", "user.name", "Magpie Test");
    git("config", "commit.gpgsign", "false");
    writeFileSync(path.join(repo, "log.txt"), "shed log\n");
    const seen = capture();
    llm.script(
      reply.toolCalls([{ name: "git_operations", arguments: { operation: "status", cwd: "repo" } }]),
      reply.toolCalls([
        { name: "git_operations", arguments: { operation: "add", cwd: "repo", files: ["log.txt"] } },
      ]),
      reply.toolCalls([
        {
          name: "git_operations",
          arguments: { operation: "commit", cwd: "repo", message: "shed: first log" },
        },
      ]),
      reply.text("Committed.", (body) => {
        seen.body = body;
      }),
    );
    const asked = approvalsAsked.length;
    await ask("commit the shed log", "Committed.");
    expect(approvalsAsked.slice(asked)).toEqual([expect.stringContaining("git commit")]);

    // Each git step's result as the model saw it, in order: status, add, commit.
    const gitResults = turnToolResults(seen.body);
    expect(gitResults[0]).toMatchObject({
      operation: "status",
      clean: false,
      files: [{ index: "?", worktree: "?", path: "log.txt" }],
    });
    expect(gitResults[1]).toMatchObject({ operation: "add", staged: ["log.txt"] });
    expect(gitResults[2]).toMatchObject({ operation: "commit", message: "shed: first log" });
    expect(git("log", "--format=%H %s")).toBe(`${gitResults[2]?.hash} shed: first log\n`);
    llm.assertDone();
  });

  it("skills: a SKILL.md in the workspace is listed in the system prompt, invoke_skill returns it, /skills lists it", async () => {
    const seen = capture();
    let system = "";
    llm.script(
      reply.toolCalls([{ name: "invoke_skill", arguments: { skill_name: "deploy" } }], (body) => {
        system = String(body.messages[0]?.content);
      }),
      reply.text("Deploying.", (body) => {
        seen.seen = toolResults(body);
      }),
    );
    await ask("deploy the site", "Deploying.");
    expect(system).toContain("- deploy: Deploy the site with rsync");
    expect(seen.seen.invoke_skill).toContain("Run rsync -av site/ shed:/srv/.");
    llm.assertDone();

    telegram.pushMessage({ chat: DM, from: { id: OWNER }, text: "/skills" });
    const listing = await waitFor(
      () =>
        telegram.sentTexts().find((text) => text.includes("Deploy the site with rsync") && text !== system),
      "the /skills reply",
    );
    expect(listing).toContain("deploy");
  });

  it("MCP: a stdio server's and an HTTP server's tools are called as mcp__<server>__<tool>; /mcp shows both ready", async () => {
    const seen = capture();
    let offered: string[] = [];
    llm.script(
      reply.toolCalls(
        [
          { name: "mcp__every__get-sum", arguments: { a: 2, b: 40 } },
          { name: "mcp__web__echo", arguments: { message: "over http" } },
        ],
        (body) => {
          offered = (body.tools ?? []).map((tool) => tool.function.name);
        },
      ),
      reply.text("MCP answered.", (body) => {
        seen.seen = toolResults(body);
      }),
    );
    await ask("add 2 and 40, and echo", "MCP answered.");
    expect(seen.seen["mcp__every__get-sum"]).toContain("The sum of 2 and 40 is 42");
    expect(seen.seen.mcp__web__echo).toContain("Echo: over http");
    expect(offered.filter((name) => name.startsWith("mcp__web__")).sort()).toEqual([
      "mcp__web__echo",
      "mcp__web__get-sum",
    ]);
    llm.assertDone();

    telegram.pushMessage({ chat: DM, from: { id: OWNER }, text: "/mcp" });
    const status = await waitFor(
      () => telegram.sentTexts().find((text) => text.includes("web (http)")),
      "the /mcp reply",
    );
    expect(status).toMatch(/every \(stdio\): ready/);
    expect(status).toMatch(/web \(http\): ready, 2 of \d+ tools offered/);

    // doctor starts each server on its own, lists its tools and stops it again.
    const doctor = await bot.cli(["doctor"]);
    expect(doctor.stdout).toMatch(/^✓ mcp every: stdio, ready, \d+ tools$/m);
    expect(doctor.stdout).toMatch(/^✓ mcp web: http, ready, \d+ tools$/m);
  });

  it.runIf(SERIAL)(
    "serial: the model opens the board's PTY and queries it; the board's answer reaches the model",
    async () => {
      const seen = capture();
      llm.script(
        reply.toolCalls([{ name: "serial", arguments: { action: "open", port: "uno" } }]),
        reply.toolCalls([
          { name: "serial", arguments: { action: "query", port: "uno", data: '{"cmd":"ping"}' } },
        ]),
        reply.text("The uno is alive.", (body) => {
          seen.body = body;
        }),
      );
      await ask("is the uno alive?", "The uno is alive.");
      expect(turnToolResults(seen.body).at(-1)).toEqual({
        port: device!.port,
        line: '{"ok":true,"board":"sim","version":1}',
      });
      llm.assertDone();
    },
  );
});
