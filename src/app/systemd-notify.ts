import { execFile } from "node:child_process";
import type { Logger } from "pino";

/** How often readiness is checked between the end of start-up and READY=1. */
const READY_POLL_MS = 100;
/** systemd-notify waits for the manager to take the message (a barrier); it never hangs us longer than this. */
const SEND_TIMEOUT_MS = 5_000;

export interface SystemdNotifyOptions {
  logger: Logger;
  /** Read once and then removed, so no child process (MCP servers, jobs) inherits the socket. */
  env?: NodeJS.ProcessEnv;
  /** The program that sends the datagram (tests point it elsewhere). */
  program?: string;
}

/** What Magpie tells systemd under `Type=notify`. */
export interface SystemdNotifier {
  /** READY=1 once `isReady()` holds (what makes `/readyz` answer 200), checked every 100 ms until then. */
  ready(isReady: () => boolean, status: string): void;
  /** STOPPING=1: the unit shows "deactivating" while turns finish and the outbox flushes. */
  stopping(): void;
  /** Stops the watchdog pings and the readiness check. */
  close(): void;
}

/**
 * sd_notify for `Type=notify` units, through systemd's own `systemd-notify` program: the protocol is one datagram
 * on the AF_UNIX socket in NOTIFY_SOCKET, and Node can't send one (node:dgram has only udp4/udp6; the npm
 * packages for it are native addons that need libsystemd headers to build). The program runs as a child, so
 * systemd must accept messages from any process of the unit: `NotifyAccess=all` in deploy/magpie.service. It waits
 * until systemd has taken each message (a barrier), so the message is never orphaned by its sender exiting first.
 *
 * When systemd asks for a watchdog (WATCHDOG_USEC), WATCHDOG=1 goes out at half that interval from a timer on the
 * main event loop and nowhere else: a wedged loop stops the pings and systemd restarts the unit.
 * Returns null without NOTIFY_SOCKET.
 */
export function startSystemdNotify(options: SystemdNotifyOptions): SystemdNotifier | null {
  const env = options.env ?? process.env;
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return null;
  const watchdogUsec = Number(env.WATCHDOG_USEC);
  // WATCHDOG_PID names the process the watchdog is meant for; a child that inherited it must not feed it.
  const watchdogForUs = !env.WATCHDOG_PID || Number(env.WATCHDOG_PID) === process.pid;
  // As sd_notify(unset_environment=1) does.
  delete env.NOTIFY_SOCKET;
  delete env.WATCHDOG_USEC;
  delete env.WATCHDOG_PID;

  const { logger } = options;
  const program = options.program ?? "systemd-notify";
  const childEnv = { PATH: env.PATH ?? "/usr/bin:/bin", NOTIFY_SOCKET: socket };
  let failed = false;
  const send = (...lines: string[]): void => {
    execFile(program, lines, { env: childEnv, timeout: SEND_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (!error || failed) return;
      // Once: a missing program would otherwise log every few seconds until the watchdog restarts us.
      failed = true;
      logger.error(
        { err: error, stderr: stderr.trim(), message: lines[0] },
        `${program} failed: systemd won't see Magpie ready or alive (install systemd's systemd-notify, or run the unit as Type=simple without WatchdogSec)`,
      );
    });
  };

  let watchdog: NodeJS.Timeout | null = null;
  if (watchdogForUs && Number.isFinite(watchdogUsec) && watchdogUsec > 0) {
    const intervalMs = Math.max(1, Math.floor(watchdogUsec / 2_000));
    send("WATCHDOG=1");
    watchdog = setInterval(() => send("WATCHDOG=1"), intervalMs);
    watchdog.unref();
    logger.info({ intervalMs }, "systemd-watchdog");
  }
  let readyPoll: NodeJS.Timeout | null = null;
  const stopReadyPoll = () => {
    if (readyPoll) clearInterval(readyPoll);
    readyPoll = null;
  };

  return {
    ready(isReady, status) {
      const check = (): boolean => {
        if (!isReady()) return false;
        stopReadyPoll();
        send("READY=1", `STATUS=${status}`);
        return true;
      };
      if (check()) return;
      readyPoll = setInterval(check, READY_POLL_MS);
      readyPoll.unref();
    },
    stopping() {
      stopReadyPoll();
      send("STOPPING=1", "STATUS=Stopping: finishing turns, flushing the outbox");
    },
    close() {
      stopReadyPoll();
      if (watchdog) clearInterval(watchdog);
      watchdog = null;
    },
  };
}
