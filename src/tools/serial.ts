import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import { anyBoardCan, boardBaud } from "../hardware/boards.js";
import { defineTool, ToolError } from "./define-tool.js";
import { deviceError, hardwareOf, requireHighRisk } from "./hardware-support.js";

/** The ports the serial tool may open: those of configured boards (by board name or device path). */
function resolvePort(config: MagpieConfig, port: string | undefined): { path: string; baud: number } {
  const boards = config.hardware.boards.filter((board) => board.port);
  const board = port
    ? boards.find((candidate) => candidate.name === port || candidate.port === port)
    : boards.length === 1
      ? boards[0]
      : undefined;
  if (!board?.port)
    throw new ToolError(
      port ? "serial.port_not_configured" : "serial.port_required",
      `${port ? `"${port}" is not a configured port` : "Name a port"}: give a board name or port from hardware.boards (${boards.map((candidate) => `${candidate.name}=${candidate.port}`).join(", ") || "none configured"}).`,
    );
  return { path: board.port, baud: boardBaud(board) };
}

/** Sketch commands that only read: sending one of these needs no risk:high approval. */
const READ_ONLY_COMMANDS = new Set(["ping", "gpio_read", "analog_read", "mem_read"]);

/**
 * Whether sending `data` only reads. Anything else can drive outputs or memory on the other end (a raw
 * `{"cmd":"gpio_write"}` must not slip past the approval `gpio write` asks for), so it counts as a write.
 */
function readOnly(data: string): boolean {
  try {
    const message: unknown = JSON.parse(data);
    return (
      typeof message === "object" &&
      message !== null &&
      READ_ONLY_COMMANDS.has(String((message as { cmd?: unknown }).cmd))
    );
  } catch {
    return false;
  }
}

export const serialTool = defineTool({
  name: "serial",
  description:
    'Serial lines of the configured boards. list: ports on this box and which are open; open (baud, line_ending lf|crlf|cr|none) makes this session the port\'s owner; write sends data plus the line ending; read waits for the next line; query writes then reads one line; close. Arduino/ESP32/Nucleo boards running the Magpie sketch speak JSON lines: query with data {"cmd":"ping"} → {"ok":true,…}. Sending anything but a read-only sketch command (ping, gpio_read, analog_read, mem_read) counts as a risk:high write.',
  inputSchema: z.object({
    action: z.enum(["list", "open", "write", "read", "query", "close"]),
    port: z
      .string()
      .min(1)
      .optional()
      .describe("Board name or its port path (default: the only configured port)."),
    baud: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("open: baud rate (default: the board's, else 115200)."),
    data: z
      .string()
      .max(4_096)
      .optional()
      .describe("write/query: the text to send (the line ending is added)."),
    line_ending: z.enum(["lf", "crlf", "cr", "none"]).optional().describe("open: default lf."),
    timeout_ms: z.number().int().min(10).max(60_000).optional().describe("read/query: default 2000."),
  }),
  risk: "medium",
  isEnabled: (config) =>
    anyBoardCan(config.hardware.boards, "serial") && config.hardware.boards.some((board) => board.port),
  async execute(input, context) {
    const { serial } = hardwareOf(context);
    const owner = context.sessionKey;
    const timeoutMs = input.timeout_ms ?? 2_000;
    try {
      if (input.action === "list") {
        const found = await serial.list().catch((error: unknown) => {
          if (error instanceof ToolError) throw error;
          return [];
        });
        return {
          ports: found,
          configured: context.config.hardware.boards.flatMap((board) =>
            board.port ? [{ board: board.name, port: board.port, baud: boardBaud(board) }] : [],
          ),
          open: serial.openPorts().map((port) => ({ ...port, mine: port.owner === owner })),
        };
      }
      const port = resolvePort(context.config, input.port);
      switch (input.action) {
        case "open":
          return {
            ...(await serial.open(port.path, {
              baud: input.baud ?? port.baud,
              lineEnding: input.line_ending ?? "lf",
              owner,
            })),
            owner,
          };
        case "write": {
          if (input.data === undefined) throw new ToolError("serial.data_required", "write needs `data`.");
          if (!readOnly(input.data))
            await requireHighRisk(context, `serial write ${port.path}: ${input.data}`);
          return { port: port.path, bytesWritten: await serial.write(port.path, owner, input.data) };
        }
        case "read":
          return { port: port.path, line: await serial.read(port.path, owner, timeoutMs) };
        case "query": {
          if (input.data === undefined) throw new ToolError("serial.data_required", "query needs `data`.");
          if (!readOnly(input.data))
            await requireHighRisk(context, `serial query ${port.path}: ${input.data}`);
          return { port: port.path, line: await serial.query(port.path, owner, input.data, timeoutMs) };
        }
        case "close":
          await serial.close(port.path, owner);
          return { port: port.path, closed: true };
      }
    } catch (error) {
      throw deviceError(error, "serial.failed", `serial ${input.action}`);
    }
  },
});
