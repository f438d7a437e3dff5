import { z } from "zod";
import { boardInfo, hostFacts } from "../hardware/board-info.js";
import { defineTool } from "./define-tool.js";
import { hardwareOf } from "./hardware-support.js";

export const hardwareBoardInfoTool = defineTool({
  name: "hardware_board_info",
  description:
    "Facts about the configured boards: chip, architecture, memory map, pins, how each is connected, plus what this host shows live (model, CPU, memory, GPIO chips, I2C/SPI/serial devices).",
  inputSchema: z.object({
    board: z.string().min(1).optional().describe("A board name from hardware.boards; omit for all."),
  }),
  risk: "low",
  readOnly: true,
  isEnabled: (config) => config.hardware.boards.length > 0,
  execute(input, context) {
    const hardware = hardwareOf(context);
    const boards = input.board ? [hardware.board(input.board)] : hardware.config.boards;
    return {
      boards: boards.map((board) => boardInfo(board, hardware.roots)),
      host: hostFacts(hardware.roots),
    };
  },
});
