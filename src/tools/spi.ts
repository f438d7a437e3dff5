import { z } from "zod";
import { anyBoardCan } from "../hardware/boards.js";
import { parseHex, toHex } from "../hardware/hex.js";
import { defineTool, ToolError } from "./define-tool.js";
import { deviceError, hardwareOf, requireHighRisk } from "./hardware-support.js";

const MAX_BYTES = 256;

export const spiTool = defineTool({
  name: "spi",
  description: `SPI on this box. list: the /dev/spidev* devices; transfer: send \`data\` (hex bytes) and get as many bytes back (full duplex); read: clock out \`length\` zero bytes (≤ ${MAX_BYTES}) and return what came in. Options: mode 0–3, speed_hz, bits_per_word.`,
  inputSchema: z.object({
    action: z.enum(["list", "transfer", "read"]),
    device: z.string().min(1).optional().describe("e.g. /dev/spidev0.0 (default: the board's spiDevice)."),
    data: z.string().optional().describe('transfer: hex bytes, e.g. "9f 00 00".'),
    length: z.number().int().optional().describe(`read: bytes, 1–${MAX_BYTES}.`),
    speed_hz: z.number().int().min(1_000).max(125_000_000).optional().describe("default 1000000."),
    mode: z.number().int().min(0).max(3).optional().describe("SPI mode 0–3 (default 0)."),
    bits_per_word: z.number().int().min(1).max(32).optional().describe("default 8."),
  }),
  risk: "medium",
  isEnabled: (config) => anyBoardCan(config.hardware.boards, "spi"),
  async execute(input, context) {
    const hardware = hardwareOf(context);
    const devices = hardware.spi.devices();
    if (input.action === "list") return { devices };
    const pi = hardware.config.boards.find((board) => board.type === "rpi-gpio");
    const device = input.device ?? pi?.spiDevice ?? devices[0] ?? "/dev/spidev0.0";
    if (!devices.includes(device))
      throw new ToolError(
        "spi.device_not_found",
        `${device} is not an SPI device on this box (found: ${devices.join(", ") || "none — enable SPI with raspi-config or dtparam=spi=on"}).`,
      );
    let bytes: Buffer;
    if (input.action === "transfer") {
      if (!input.data) throw new ToolError("spi.data_required", "transfer needs `data` (hex bytes).");
      bytes = parseHex(input.data, "data");
    } else {
      const length = input.length ?? 0;
      if (length < 1 || length > MAX_BYTES)
        throw new ToolError("spi.invalid_length", `read needs length 1–${MAX_BYTES}.`);
      bytes = Buffer.alloc(length);
    }
    if (bytes.length > MAX_BYTES)
      throw new ToolError("spi.invalid_length", `At most ${MAX_BYTES} bytes per transfer.`);
    const settings = {
      mode: (input.mode ?? 0) as 0 | 1 | 2 | 3,
      speedHz: input.speed_hz ?? 1_000_000,
      bitsPerWord: input.bits_per_word ?? 8,
    };
    if (input.action === "transfer")
      await requireHighRisk(context, `spi transfer ${device}: ${toHex(bytes)}`);
    try {
      const handle = await hardware.spi.open(device);
      try {
        const received = await handle.transfer(bytes, settings);
        return { device, sent: toHex(bytes), received: toHex(received) };
      } finally {
        await handle.close().catch(() => undefined);
      }
    } catch (error) {
      throw deviceError(error, "spi.failed", `spi ${input.action} on ${device}`);
    }
  },
});
