import type { BoardConfig } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { boardBaud } from "./boards.js";
import { type Gpio, type GpioLine, toLevel } from "./gpio-port.js";
import type { SerialManager } from "./serial-manager.js";

const REQUEST_TIMEOUT_MS = 3_000;

/**
 * Sends one command of the JSON-lines protocol (docs/hardware-protocol.md) to a serial board:
 * `{"cmd":"gpio_write","pin":13,"value":1}` → `{"ok":true}`; `{"ok":false,"error":"…"}` becomes a ToolError.
 */
export async function boardRequest(
  serial: SerialManager,
  board: BoardConfig,
  message: Record<string, unknown>,
  timeoutMs = REQUEST_TIMEOUT_MS,
): Promise<Record<string, unknown>> {
  if (!board.port)
    throw new ToolError("board.no_port", `Board "${board.name}" has no serial port configured.`);
  let answer: Record<string, unknown>;
  try {
    answer = await serial.request(board.port, boardBaud(board), message, timeoutMs);
  } catch (error) {
    if (error instanceof ToolError && error.code === "serial.timeout")
      throw new ToolError(
        "board.timeout",
        `Board "${board.name}" did not answer ${JSON.stringify(message)} within ${timeoutMs} ms. Is the Magpie sketch (docs/hardware-protocol.md) flashed and the baud rate ${boardBaud(board)}?`,
      );
    throw error;
  }
  if (answer.ok !== true)
    throw new ToolError(
      "board.error",
      `Board "${board.name}" refused ${String(message.cmd)}: ${typeof answer.error === "string" ? answer.error : JSON.stringify(answer)}`,
    );
  return answer;
}

/** GPIO on a serial board through its sketch (no edges: the protocol has no events yet). */
export class ProtocolGpio implements Gpio {
  constructor(
    private readonly serial: SerialManager,
    private readonly board: BoardConfig,
  ) {}

  async open(line: number, direction: "in" | "out", watchEdges: boolean): Promise<GpioLine> {
    if (watchEdges)
      throw new ToolError(
        "gpio.not_supported",
        `Watching pins on a ${this.board.type} is not supported yet.`,
      );
    await boardRequest(this.serial, this.board, { cmd: "gpio_mode", pin: line, mode: direction });
    return {
      read: async () => {
        const answer = await boardRequest(this.serial, this.board, { cmd: "gpio_read", pin: line });
        return toLevel(Number(answer.value));
      },
      write: async (value) =>
        void (await boardRequest(this.serial, this.board, { cmd: "gpio_write", pin: line, value })),
      onEdge: () => {
        throw new ToolError(
          "gpio.not_supported",
          `Watching pins on a ${this.board.type} is not supported yet.`,
        );
      },
      release: () => undefined,
    };
  }
}
