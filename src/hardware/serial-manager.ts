import { existsSync, realpathSync } from "node:fs";
import type { BoardConfig } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import { boardBaud } from "./boards.js";
import type { SerialBackend, SerialStream } from "./serial-backend.js";

export type LineEnding = "lf" | "crlf" | "cr" | "none";

const ENDINGS: Record<LineEnding, string> = { lf: "\n", crlf: "\r\n", cr: "\r", none: "" };
const MAX_BUFFERED_LINES = 200;
const MAX_LINE_CHARS = 4_096;
const PRESENCE_CHECK_MS = 250;

interface OpenPort {
  path: string;
  baud: number;
  lineEnding: LineEnding;
  /** The session that opened it with the serial tool, or null while only board requests and listeners use it. */
  owner: string | null;
  stream: SerialStream;
  lines: string[];
  partial: string;
  /** The line being received is past MAX_LINE_CHARS: listeners skip it whole. */
  overlong: boolean;
  /** Whole lines for listeners (serial triggers): the port stays open while one listens. */
  listeners: Set<SerialListener>;
  waiters: Array<{ resolve: (line: string) => void; reject: (error: ToolError) => void }>;
  /** Serializes request/response exchanges (query, board protocol) on one line. */
  queue: Promise<unknown>;
  idleTimer: NodeJS.Timeout | null;
  presence: NodeJS.Timeout;
}

/** Lines of a port for a listener (a serial trigger); `closed` when the device goes away. */
export interface SerialListener {
  line(line: string): void;
  closed?(error: Error | null): void;
}

export interface SerialManagerOptions {
  backend: SerialBackend;
  /**
   * The configured boards (`hardware.boards`): the only devices this manager opens, whoever asks — the serial
   * tool, a board request, a serial trigger (DESIGN.md → Security → "One guard per resource").
   */
  boards: readonly Pick<BoardConfig, "name" | "port" | "baud">[];
  /** Ports a session opened and left unused this long are closed (the session is over). Default 10 min. */
  idleMs?: number;
}

/**
 * Open serial lines: only configured boards' ports, one owner (session) per port, lines buffered for `read` and
 * handed to listeners, closed when idle (and nobody listens) or on stop.
 */
export class SerialManager {
  private readonly ports = new Map<string, OpenPort>();

  constructor(private readonly options: SerialManagerOptions) {}

  /**
   * The configured port a board name or device path stands for (its path as configured, and its baud), or null.
   * A path is judged by where it lands: another spelling of a board's device (a symlink, `..`) is that board's
   * port; any other device is not one Magpie opens.
   */
  configuredPort(nameOrPath: string): { path: string; baud: number } | null {
    const boards = this.options.boards.filter((board) => board.port);
    const named =
      boards.find((board) => board.name === nameOrPath || board.port === nameOrPath) ??
      boards.find((board) => {
        const real = realPath(nameOrPath);
        return real !== null && real === realPath(board.port!);
      });
    return named?.port ? { path: named.port, baud: boardBaud(named) } : null;
  }

  /** Throws unless `nameOrPath` is a configured board's port; returns that port. */
  private guarded(nameOrPath: string): { path: string; baud: number } {
    const port = this.configuredPort(nameOrPath);
    if (!port)
      throw new ToolError(
        "serial.port_not_configured",
        `"${nameOrPath}" is not a configured board's port, and Magpie opens no other serial device. Configured: ${this.describeBoards()}.`,
      );
    return port;
  }

  private describeBoards(): string {
    const boards = this.options.boards.filter((board) => board.port);
    return boards.map((board) => `${board.name}=${board.port}`).join(", ") || "none (hardware.boards)";
  }

  list() {
    return this.options.backend.list();
  }

  /** The open ports with their owners. */
  openPorts(): Array<{ path: string; baud: number; owner: string | null; buffered: number }> {
    return [...this.ports.values()].map((port) => ({
      path: port.path,
      baud: port.baud,
      owner: port.owner,
      buffered: port.lines.length,
    }));
  }

  /** Opens `path` for `owner`; refused while another session owns it. */
  async open(
    path: string,
    settings: { baud: number; lineEnding: LineEnding; owner: string | null },
  ): Promise<{ path: string; baud: number; alreadyOpen: boolean }> {
    path = this.guarded(path).path;
    const current = this.ports.get(path);
    if (current) {
      this.checkOwner(current, settings.owner);
      if (settings.owner) current.owner = settings.owner;
      current.lineEnding = settings.lineEnding;
      this.touch(current);
      return { path, baud: current.baud, alreadyOpen: true };
    }
    const stream = await this.options.backend.open(path, settings.baud);
    const port: OpenPort = {
      path,
      baud: settings.baud,
      lineEnding: settings.lineEnding,
      owner: settings.owner,
      stream,
      lines: [],
      partial: "",
      overlong: false,
      listeners: new Set(),
      waiters: [],
      queue: Promise.resolve(),
      idleTimer: null,
      // serialport does not always notice a device that went away (USB unplugged, PTY closed): watch the path.
      presence: setInterval(() => {
        if (!existsSync(path)) this.closed(port, new Error("the device disappeared"));
      }, PRESENCE_CHECK_MS),
    };
    port.presence.unref();
    this.ports.set(path, port);
    stream.onData((chunk) => this.received(port, chunk));
    stream.onClose((error) => this.closed(port, error));
    this.touch(port);
    return { path, baud: settings.baud, alreadyOpen: false };
  }

  /** Writes `data` plus the port's line ending. */
  async write(path: string, owner: string | null, data: string): Promise<number> {
    const port = this.usable(path, owner);
    const bytes = Buffer.from(data + ENDINGS[port.lineEnding], "utf8");
    await this.writeBytes(port, bytes);
    return bytes.length;
  }

  /** The next line received (buffered ones first), or a timeout error. */
  async read(path: string, owner: string | null, timeoutMs: number): Promise<string> {
    const port = this.usable(path, owner);
    return this.nextLine(port, timeoutMs);
  }

  /** Writes `data`, then reads the next line; exchanges on one port don't interleave. */
  async query(path: string, owner: string | null, data: string, timeoutMs: number): Promise<string> {
    const port = this.usable(path, owner);
    return this.exclusive(port, async () => {
      port.lines = [];
      await this.writeBytes(port, Buffer.from(data + ENDINGS[port.lineEnding], "utf8"));
      return this.nextLine(port, timeoutMs);
    });
  }

  /**
   * Sends one JSON-lines request to a board and returns its JSON answer (lines that aren't a JSON object are
   * the sketch's chatter and skipped). Opens the port when needed; works whoever owns it.
   */
  async request(
    path: string,
    baud: number,
    message: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    path = this.guarded(path).path;
    if (!this.ports.has(path)) await this.open(path, { baud, lineEnding: "lf", owner: null });
    const port = this.ports.get(path)!;
    return this.exclusive(port, async () => {
      port.lines = [];
      await this.writeBytes(port, Buffer.from(`${JSON.stringify(message)}\n`, "utf8"));
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const line = await this.nextLine(port, Math.max(1, deadline - Date.now()));
        const answer = parseObject(line);
        if (answer) return answer;
      }
    });
  }

  /**
   * Delivers every whole line of a configured port to `listener` (opened for it when needed, at the board's baud
   * unless `baud` is given). Lines longer than 4,096 characters are skipped whole. Returns the stop; the port
   * closes once nobody listens, owns or uses it.
   */
  async listen(nameOrPath: string, baud: number | undefined, listener: SerialListener): Promise<() => void> {
    const configured = this.guarded(nameOrPath);
    if (!this.ports.has(configured.path))
      await this.open(configured.path, { baud: baud ?? configured.baud, lineEnding: "lf", owner: null });
    const port = this.ports.get(configured.path)!;
    port.listeners.add(listener);
    return () => {
      port.listeners.delete(listener);
      if (port.listeners.size === 0) this.touch(port);
    };
  }

  /** Closes `path` (its owner only); while a listener reads it, only the ownership ends. */
  async close(path: string, owner: string | null): Promise<void> {
    const port = this.usable(path, owner);
    await this.release(port);
  }

  /** Closes the ports a session owns (the session ended: /reset). */
  async closeOwnedBy(owner: string): Promise<void> {
    await Promise.all(
      [...this.ports.values()].filter((port) => port.owner === owner).map((port) => this.release(port)),
    );
  }

  /** A session is done with a port: it closes, unless a listener still reads it (then it only loses its owner). */
  private async release(port: OpenPort): Promise<void> {
    if (port.listeners.size === 0) return this.shut(port);
    port.owner = null;
    port.lines = [];
  }

  /** Closes every port (shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.ports.values()].map((port) => this.shut(port)));
  }

  private usable(path: string, owner: string | null): OpenPort {
    const port = this.ports.get(path);
    if (!port)
      throw new ToolError(
        "serial.not_open",
        `${path} is not open. Call the serial tool with action "open" first.`,
      );
    this.checkOwner(port, owner);
    this.touch(port);
    return port;
  }

  private checkOwner(port: OpenPort, owner: string | null): void {
    if (port.owner && owner && port.owner !== owner)
      throw new ToolError(
        "serial.port_busy",
        `${port.path} is open in another session (${port.owner}); one owner per port. Ask there to close it, or wait until it idles out.`,
      );
  }

  private async writeBytes(port: OpenPort, bytes: Buffer): Promise<void> {
    try {
      await port.stream.write(bytes);
    } catch (error) {
      throw new ToolError("serial.write_failed", `Writing to ${port.path} failed: ${errorMessage(error)}`);
    }
  }

  private exclusive<T>(port: OpenPort, work: () => Promise<T>): Promise<T> {
    const run = port.queue.then(work, work);
    port.queue = run.catch(() => undefined);
    return run;
  }

  private nextLine(port: OpenPort, timeoutMs: number): Promise<string> {
    const buffered = port.lines.shift();
    if (buffered !== undefined) return Promise.resolve(buffered);
    if (!this.ports.has(port.path)) return Promise.reject(portGone(port.path, null));
    return new Promise((resolve, reject) => {
      const waiter = {
        resolve: (line: string) => {
          clearTimeout(timer);
          resolve(line);
        },
        reject: (error: ToolError) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        port.waiters = port.waiters.filter((candidate) => candidate !== waiter);
        const partial = port.partial
          ? ` (partial line so far: ${JSON.stringify(port.partial.slice(0, 80))})`
          : "";
        reject(
          new ToolError("serial.timeout", `No line from ${port.path} within ${timeoutMs} ms${partial}.`),
        );
      }, timeoutMs);
      port.waiters.push(waiter);
    });
  }

  private received(port: OpenPort, chunk: Buffer): void {
    port.partial += chunk.toString("utf8");
    const parts = port.partial.split(/\r?\n|\r/);
    const rest = parts.pop() ?? "";
    port.partial = rest.slice(-MAX_LINE_CHARS);
    let overlong = port.overlong;
    port.overlong = rest.length > MAX_LINE_CHARS || (parts.length === 0 && port.overlong);
    for (const part of parts) {
      const line = part.slice(0, MAX_LINE_CHARS);
      // A listener gets whole lines only: one cut at the cap (or whose head was dropped) is another line.
      if (!overlong && part.length <= MAX_LINE_CHARS && line !== "")
        for (const listener of port.listeners) listener.line(line);
      overlong = false;
      if (line === "") continue;
      const waiter = port.waiters.shift();
      if (waiter) waiter.resolve(line);
      else {
        port.lines.push(line);
        if (port.lines.length > MAX_BUFFERED_LINES) port.lines.shift();
      }
    }
  }

  private closed(port: OpenPort, error: Error | null): void {
    if (this.ports.get(port.path) !== port) return;
    this.ports.delete(port.path);
    if (port.idleTimer) clearTimeout(port.idleTimer);
    clearInterval(port.presence);
    if (error) void port.stream.close().catch(() => undefined);
    for (const waiter of port.waiters.splice(0)) waiter.reject(portGone(port.path, error));
    for (const listener of port.listeners) listener.closed?.(error);
    port.listeners.clear();
  }

  private async shut(port: OpenPort): Promise<void> {
    this.closed(port, null);
    await port.stream.close().catch(() => undefined);
  }

  private touch(port: OpenPort): void {
    if (port.idleTimer) clearTimeout(port.idleTimer);
    // An idle session gives the port up; a listener keeps it open.
    port.idleTimer = setTimeout(() => void this.release(port), this.options.idleMs ?? 600_000);
    port.idleTimer.unref();
  }
}

function portGone(path: string, error: Error | null): ToolError {
  return new ToolError(
    "serial.port_closed",
    `${path} closed${error ? ` (${error.message})` : ""}: the device went away or the port was closed. Check the cable, then "open" it again.`,
  );
}

/** The path with every symlink and `..` resolved, or null when it does not exist. */
function realPath(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}

function parseObject(line: string): Record<string, unknown> | null {
  if (!line.trimStart().startsWith("{")) return null;
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
