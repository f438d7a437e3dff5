import { enabledChatChannels } from "../../channels/index.js";
import { MagpieApp } from "../app/app.js";
import { listenForReloads } from "../app/reload-process.js";
import { createLogger } from "../log/logger.js";
import { createRedactor } from "../log/redact.js";
import { recordInstance } from "../upgrade/instance.js";
import type { CliEnv } from "./cli-env.js";

const FORCE_EXIT_MS = 10_000;
/** After a clean stop, how long an open handle may keep the process before it exits anyway (code 0). */
const LINGER_MS = 2_000;

/** `magpie start` / `magpie chat`: runs in the foreground until SIGTERM/SIGINT (or Ctrl-D in chat). */
export async function runStart({
  env,
  mode,
  version,
}: {
  env: CliEnv;
  mode: "start" | "chat";
  version: string;
}): Promise<number> {
  // The environment before `.env` fills it: a reload reads `.env` again on top of this.
  const startEnv = { ...process.env };
  const config = env.loadConfig();
  const chatChannels = enabledChatChannels(config).length > 0;
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const useConsole = mode === "chat" || (config.channels.console.enabled ?? (interactive && !chatChannels));
  const redactor = createRedactor(config);
  // In a terminal chat, keep the log quiet so it doesn't interleave with the conversation.
  const logger = createLogger({ redactor, level: process.env.LOG_LEVEL ?? (useConsole ? "warn" : "info") });

  let resolveExit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => {
    resolveExit = resolve;
  });
  // Under systemd's Type=notify only: nothing of it loads otherwise.
  const notifier = process.env.NOTIFY_SOCKET
    ? (await import("../app/systemd-notify.js")).startSystemdNotify({ logger })
    : null;
  const { ConsoleChannel } = await import("../../channels/console.js");
  const app = new MagpieApp({
    config,
    logger,
    loadChannels: mode !== "chat",
    console: useConsole ? new ConsoleChannel({ onClose: () => void shutdown("console-closed") }) : false,
  });

  let stopping = false;
  let forgetInstance = () => {};
  let stopReloads: () => Promise<void> = async () => {};
  async function shutdown(reason: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    forgetInstance();
    logger.info({ reason }, "magpie-stopping");
    notifier?.stopping();
    const force = setTimeout(() => {
      logger.error("shutdown took longer than 10 s; exiting");
      process.exit(1);
    }, FORCE_EXIT_MS);
    force.unref();
    try {
      // A reload under way finishes first (within the 10 s above).
      await stopReloads().catch(() => {});
      await app.stop();
      clearTimeout(force);
      // Everything Magpie runs has stopped. A handle left open past that (a killed command's pipe still held by
      // a process of its group, a keep-alive socket) must not keep a clean stop waiting for the 10 s force-exit
      // and its exit code 1: name what was open and exit 0.
      const linger = setTimeout(() => {
        logger.warn({ resources: process.getActiveResourcesInfo() }, "magpie-stopped-with-open-handles");
        process.exit(0);
      }, LINGER_MS);
      linger.unref();
      resolveExit(0);
    } catch (error) {
      logger.error({ err: error }, "shutdown-failed");
      resolveExit(1);
    } finally {
      notifier?.close();
    }
  }
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  try {
    await app.start();
  } catch (error) {
    env.stderr.write(`Magpie could not start: ${error instanceof Error ? error.message : String(error)}\n`);
    await app.stop().catch(() => {});
    notifier?.close();
    return 1;
  }
  // SIGHUP (`magpie reload`) and a change of the config file or .env apply a new config live.
  stopReloads = listenForReloads(app, { startEnv, logRedactor: redactor });
  const address = app.http.address;
  // `magpie reload`, `restore` and `upgrade` find this process through <dataDir>/magpie.pid.
  forgetInstance = recordInstance(config.dataDir, {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    mode,
    version,
    http: address ? { host: address.address, port: address.port } : null,
    configPath: config.sourcePath,
    execPath: process.execPath,
    argv: process.argv.slice(1),
    cwd: process.cwd(),
  });
  if (!useConsole && address)
    logger.info(`ready — health at http://${address.address}:${address.port}/readyz`);
  // A SIGTERM during start-up already said STOPPING=1.
  notifier?.ready(
    () => app.isReady && !stopping,
    address ? `Ready; health at http://${address.address}:${address.port}/readyz` : "Ready",
  );
  return exited;
}
