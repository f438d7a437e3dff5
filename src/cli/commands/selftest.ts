import { mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import type { CliCommand } from "../cli-env.js";
import { parseCli } from "../parse-cli.js";

const USAGE = `Usage: magpie selftest
  One synthetic turn through the console path, as magpie upgrade checks a new release: this build loads the
  config, opens a scratch database (migrations applied) in a temporary directory under dataDir, sends one
  console message and waits for the configured model's answer to come back through the outbox. The real
  database, channels, cron jobs, triggers and MCP servers are not touched.`;

const PROMPT = "This is Magpie's upgrade check. Please answer with one short sentence.";
const TURN_TIMEOUT_MS = 90_000;

/**
 * `magpie selftest` (hidden; run by `magpie upgrade` in the new release). What it proves: this release's code
 * loads and runs, it accepts this config, migrations run on a new database, and one console turn reaches the
 * configured LLM and its answer (turn status ok) is delivered to the console channel through the outbox. It
 * does not prove the channels connect (that is `/readyz`) or the real database migrated (the running instance
 * opened it before `/readyz` said 200).
 */
export const run: CliCommand = async (argv, env) => {
  const parsed = parseCli(argv, env, USAGE, {});
  if (typeof parsed === "number") return parsed;
  const loaded = env.loadConfig();
  const scratch = mkdtempSync(path.join(loaded.dataDir, ".selftest-"));
  const [{ MagpieApp }, { ConsoleChannel }, { magpieEvents }, { createLogger }] = await Promise.all([
    import("../../app/app.js"),
    import("../../../channels/console.js"),
    import("../../core/events.js"),
    import("../../log/logger.js"),
  ]);
  const input = new PassThrough();
  const output = new PassThrough();
  let answer = "";
  output.on("data", (chunk: Buffer) => {
    answer += chunk.toString();
  });
  const app = new MagpieApp({
    // An unreachable model fails the check at once, naming why (a running instance would wait it out).
    config: {
      ...loaded,
      agent: { ...loaded.agent, retryOutageForSecs: 0 },
      dataDir: scratch,
      workspace: path.join(scratch, "workspace"),
    },
    logger: createLogger({ level: "error" }),
    loadChannels: false,
    console: new ConsoleChannel({ input, output, color: false, userName: "magpie-upgrade" }),
    features: [],
    listen: false,
  });
  const started = Date.now();
  try {
    if (!app.model) {
      env.stdout.write("✓ selftest: no LLM is configured, so no turn was run.\n");
      return 0;
    }
    await app.start();
    const outcome = await new Promise<{ status: string; errorCode?: string }>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer within ${TURN_TIMEOUT_MS / 1000} s`)),
        TURN_TIMEOUT_MS,
      );
      let turn: { status: string; errorCode?: string } | null = null;
      let delivered = false;
      const settle = () => {
        if (!turn || !delivered) return;
        clearTimeout(timer);
        resolve(turn);
      };
      magpieEvents.turnFinished.subscribe(app.events.app, (event) => {
        turn = { status: event.status, ...(event.errorCode ? { errorCode: event.errorCode } : {}) };
        settle();
      });
      magpieEvents.delivery.subscribe(app.events.app, (event) => {
        if (event.channel !== "console") return;
        if (event.status === "failed") reject(new Error(`the answer was not delivered: ${event.error}`));
        if (event.status === "sent") delivered = true;
        settle();
      });
      input.write(`${PROMPT}\n`);
    });
    const text = answer.replace(/\s+/g, " ").trim();
    if (outcome.status !== "ok" || !text) {
      env.stderr.write(
        `✗ selftest: the turn ended ${outcome.status}${outcome.errorCode ? ` (${outcome.errorCode})` : ""}: ${text.slice(0, 500) || "no answer"}\n`,
      );
      return 1;
    }
    env.stdout.write(
      `✓ synthetic turn: ${loaded.llm.model} answered through the console path in ${Date.now() - started} ms: ${text.slice(0, 120)}\n`,
    );
    return 0;
  } catch (error) {
    env.stderr.write(`✗ selftest: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    input.end();
    await app.stop().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
};
