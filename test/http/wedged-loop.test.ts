import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";
import { modulesLoadedAtStart } from "../helpers/loaded-modules.js";
import { hasPrograms } from "../helpers/requires.js";

const BLOCK_LOOP = pathToFileURL(path.resolve("test/helpers/block-loop.mjs")).href;
/** A loop stall the bot must notice: five times its limit, so a slow test runner still asks during it. */
const MAX_BLOCK_MS = 500;
const BLOCK_MS = 2_500;

/** Stands in for systemd's notify socket: one line per datagram, `<JSON string>`, after a `LISTENING` line. */
const NOTIFY_LISTENER = `
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("LISTENING", flush=True)
while True:
    # systemd-notify's BARRIER=1 carries a pipe fd; the kernel closes fds that don't fit, which releases the barrier.
    data, _, _, _ = s.recvmsg(4096)
    print(json.dumps(data.decode()), flush=True)
`;

interface Timed {
  text: string;
  at: number;
}

/** Calls `onLine` for each line of a stream, stamped with when it arrived. */
function lines(stream: NodeJS.ReadableStream, onLine: (line: Timed) => void): void {
  let buffered = "";
  stream.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      onLine({ text: buffered.slice(0, newline), at: Date.now() });
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
  });
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

/** The built CLI with the loop-blocking preload; SIGUSR2 blocks its event loop for BLOCK_MS. */
async function startBot(cwd: string, env: Record<string, string> = {}) {
  writeFileSync(path.join(cwd, "magpie.yaml"), `http:\n  port: 0\n  maxEventLoopBlockMs: ${MAX_BLOCK_MS}\n`);
  const child = spawn(
    process.execPath,
    ["--import", BLOCK_LOOP, ...MAGPIE_NODE_ARGS, "start", "--config", "magpie.yaml"],
    {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: cwd,
        LOG_LEVEL: "info",
        BLOCK_LOOP_MS: String(BLOCK_MS),
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  const stdout: Timed[] = [];
  const stderr: Timed[] = [];
  lines(child.stdout!, (line) => stdout.push(line));
  lines(child.stderr!, (line) => stderr.push(line));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const port = await until("http-listening", () => {
    if (child.exitCode !== null) throw new Error(`exited: ${stderr.map((line) => line.text).join("\n")}`);
    const line = stdout.find((entry) => entry.text.includes('"msg":"http-listening"'))?.text;
    return line ? Number(/"port":(\d+)/.exec(line)?.[1]) : undefined;
  });
  const url = `http://127.0.0.1:${port}`;
  await until("/readyz 200", async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined));
  /** Blocks the loop; resolves with when the block started and, later, when it ended (stderr marks). */
  const block = async () => {
    child.kill("SIGUSR2");
    const started = await until("BLOCK-START", () => stderr.find((line) => line.text === "BLOCK-START")?.at);
    return {
      started,
      ended: () => until("BLOCK-END", () => stderr.find((line) => line.text === "BLOCK-END")?.at),
    };
  };
  return { child, url, stdout, block, exited };
}

describe("a wedged event loop, through the built CLI", () => {
  it("/healthz: 200, then 503 for a request that arrives while the loop is blocked, then 200 again", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-wedged-"));
    const bot = await startBot(cwd);
    expect((await fetch(`${bot.url}/healthz`)).status).toBe(200);

    const block = await bot.block();
    // Sent during the block: nothing answers until it is over, then the stall is reported.
    const during = await fetch(`${bot.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    const ended = await block.ended();
    expect(during.status).toBe(503);
    const body = (await during.json()) as { status: string; eventLoopBlockedMs: number };
    expect(body.status).toBe("blocked");
    // Measured to within one heartbeat tick (a tenth of the limit) of the real block.
    expect(body.eventLoopBlockedMs).toBeGreaterThan(MAX_BLOCK_MS);
    expect(body.eventLoopBlockedMs).toBeLessThan(BLOCK_MS + 1_000);
    // /readyz is about the database and the channels, not liveness.
    expect((await fetch(`${bot.url}/readyz`)).status).toBe(200);

    // Recovery: healthy once the loop has kept time for maxEventLoopBlockMs after the block.
    await until("/healthz 200 again", async () =>
      (await fetch(`${bot.url}/healthz`)).status === 200 ? true : undefined,
    );
    expect(Date.now() - ended).toBeLessThan(MAX_BLOCK_MS + 3_000);
    expect(bot.stdout.some((line) => /"blockedMs":\d+[^\n]*"msg":"event-loop-blocked"/.test(line.text))).toBe(
      true,
    );

    bot.child.kill("SIGTERM");
    expect(await bot.exited).toBe(0);
  }, 60_000);

  it("without NOTIFY_SOCKET, nothing of the systemd notifier is loaded", async () => {
    const { urls } = await modulesLoadedAtStart("http:\n  port: 0\n");
    expect(urls.some((url) => url.endsWith("/http/loop-monitor.js"))).toBe(true);
    expect(urls.filter((url) => url.includes("systemd-notify"))).toEqual([]);
  }, 30_000);

  it.runIf(hasPrograms("python3", "systemd-notify"))(
    "under Type=notify: READY=1 once ready, WATCHDOG=1 pings stop while the loop is blocked and resume, STOPPING=1 on SIGTERM",
    async () => {
      const cwd = mkdtempSync(path.join(tmpdir(), "magpie-notify-"));
      const socket = path.join(cwd, "notify.sock");
      const listener = spawn("python3", ["-c", NOTIFY_LISTENER, socket], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(listener);
      const messages: Timed[] = [];
      lines(listener.stdout!, (line) => {
        if (line.text !== "LISTENING") messages.push({ text: JSON.parse(line.text) as string, at: line.at });
      });
      let listening = false;
      listener.stdout!.once("data", () => (listening = true));
      await until("the notify listener", () => (listening ? true : undefined));

      // 300 ms watchdog: a ping every 150 ms.
      const bot = await startBot(cwd, { NOTIFY_SOCKET: socket, WATCHDOG_USEC: "300000" });
      const ready = await until("READY=1", () =>
        messages.find((message) => message.text.includes("READY=1")),
      );
      expect(ready.text).toMatch(/^READY=1\nSTATUS=Ready; health at http:\/\/127\.0\.0\.1:\d+\/readyz$/);
      // Sent once ready: the log says so, and /readyz agrees.
      const readyLog = bot.stdout.find((line) => line.text.includes('"msg":"magpie-ready"'));
      expect(readyLog).toBeDefined();
      expect((await fetch(`${bot.url}/readyz`)).status).toBe(200);
      expect(messages.filter((message) => message.text.includes("READY=1"))).toHaveLength(1);

      const pings = () =>
        messages.filter((message) => message.text === "WATCHDOG=1").map((message) => message.at);
      await until("steady pings", () => (pings().length >= 5 ? true : undefined));
      const block = await bot.block();
      const ended = await block.ended();
      await until("pings after the block", () =>
        pings().filter((at) => at > ended).length >= 3 ? true : undefined,
      );
      // A ping already on its way when the block began may land just after it, and one sent as it ended may be
      // read before its BLOCK-END line; none is sent during it.
      const during = pings().filter((at) => at > block.started + 300 && at < ended - 100);
      expect(during).toEqual([]);
      const all = pings();
      const gaps = all.slice(1).map((at, index) => at - all[index]!);
      expect(Math.max(...gaps)).toBeGreaterThan(BLOCK_MS - 400);

      bot.child.kill("SIGTERM");
      expect(await bot.exited).toBe(0);
      await until("STOPPING=1", () => messages.find((message) => message.text.startsWith("STOPPING=1")));
    },
    60_000,
  );
});
