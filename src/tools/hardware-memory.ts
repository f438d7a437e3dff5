import { z } from "zod";
import { anyBoardCan, BOARD_FACTS } from "../hardware/boards.js";
import { parseHex } from "../hardware/hex.js";
import { checkRange, MAX_MEMORY_LENGTH } from "../hardware/memory-access.js";
import { defineTool, ToolError } from "./define-tool.js";
import { deviceError, hardwareOf, parseNumber, requireHighRisk } from "./hardware-support.js";

export const hardwareMemoryTool = defineTool({
  name: "hardware_memory",
  description: `Read or write a Nucleo board's memory (flash, SRAM, peripheral registers): through probe-rs over SWD when it is installed, else the Magpie sketch's serial protocol. At most ${MAX_MEMORY_LENGTH} bytes; hex out, hex in.`,
  inputSchema: z.object({
    action: z.enum(["read", "write"]),
    address: z.union([z.number().int(), z.string()]).describe('e.g. "0x20000000".'),
    length: z.number().int().optional().describe(`read: 1–${MAX_MEMORY_LENGTH} bytes (default 4).`),
    value: z.string().optional().describe('write: hex bytes, e.g. "01 02 03 04".'),
    board: z.string().min(1).optional().describe("Board name (default: the only board with memory access)."),
  }),
  risk: "medium",
  isEnabled: (config) => anyBoardCan(config.hardware.boards, "memory"),
  async execute(input, context) {
    const hardware = hardwareOf(context);
    const board = hardware.board(
      input.board,
      (candidate) => BOARD_FACTS[candidate.type].capabilities.memory,
      "memory access",
    );
    const address = parseNumber(input.address, "address");
    try {
      if (input.action === "read") {
        const result = await hardware.memory.read(board, address, input.length ?? 4);
        return { board: board.name, address: `0x${address.toString(16)}`, ...result };
      }
      if (!input.value) throw new ToolError("memory.value_required", "write needs `value` (hex bytes).");
      const bytes = parseHex(input.value, "value");
      if (bytes.length > MAX_MEMORY_LENGTH)
        throw new ToolError("memory.invalid_length", `At most ${MAX_MEMORY_LENGTH} bytes per write.`);
      checkRange(address, bytes.length);
      await requireHighRisk(
        context,
        `hardware_memory write ${board.name} 0x${address.toString(16)}: ${input.value}`,
      );
      return {
        board: board.name,
        address: `0x${address.toString(16)}`,
        ...(await hardware.memory.write(board, address, bytes)),
      };
    } catch (error) {
      throw deviceError(error, "memory.failed", `hardware_memory ${input.action}`);
    }
  },
});
