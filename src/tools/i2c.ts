import { z } from "zod";
import { anyBoardCan } from "../hardware/boards.js";
import { hexByte, parseHex, toHex } from "../hardware/hex.js";
import { defineTool, ToolError } from "./define-tool.js";
import { deviceError, hardwareOf, parseNumber, requireHighRisk } from "./hardware-support.js";

const FIRST_ADDRESS = 0x03;
const LAST_ADDRESS = 0x77;
const MAX_LENGTH = 32;

export const i2cTool = defineTool({
  name: "i2c",
  description: `I2C on this box. detect: the buses (/dev/i2c-N); scan: addresses that answer on a bus (0x03–0x77); read: \`length\` bytes (≤ ${MAX_LENGTH}) from a device, from \`register\` when given; write: \`value\` (hex bytes "0a ff" or one byte as a number) to a device, to \`register\` when given. Bytes come back as hex.`,
  inputSchema: z.object({
    action: z.enum(["detect", "scan", "read", "write"]),
    bus: z.number().int().min(0).optional().describe("Bus number (default: the board's i2cBus, else 1)."),
    address: z
      .union([z.number().int(), z.string()])
      .optional()
      .describe('7-bit address, 0x03–0x77, e.g. 72 or "0x48".'),
    register: z.union([z.number().int(), z.string()]).optional().describe("Register 0x00–0xff."),
    value: z
      .union([z.number().int(), z.string()])
      .optional()
      .describe('write: hex bytes ("0a ff") or one byte 0–255.'),
    length: z.number().int().optional().describe(`read: bytes, 1–${MAX_LENGTH} (default 1).`),
  }),
  risk: "medium",
  isEnabled: (config) => anyBoardCan(config.hardware.boards, "i2c"),
  async execute(input, context) {
    const hardware = hardwareOf(context);
    if (input.action === "detect")
      return { buses: hardware.i2c.buses().map((bus) => ({ bus, device: `/dev/i2c-${bus}` })) };
    const pi = hardware.config.boards.find((board) => board.type === "rpi-gpio");
    const bus = input.bus ?? pi?.i2cBus ?? 1;
    const address = input.action === "scan" ? 0 : checkedAddress(input.address);
    const register = input.register === undefined ? undefined : parseNumber(input.register, "register");
    if (register !== undefined && (register < 0 || register > 0xff))
      throw new ToolError("i2c.invalid_register", `Register ${register} is out of range 0x00–0xff.`);
    let bytes: Buffer | undefined;
    if (input.action === "write") {
      if (input.value === undefined) throw new ToolError("i2c.value_required", "write needs `value`.");
      bytes = typeof input.value === "number" ? byteOf(input.value) : parseHex(input.value, "value");
      if (bytes.length > MAX_LENGTH)
        throw new ToolError("i2c.invalid_length", `At most ${MAX_LENGTH} bytes per write.`);
      await requireHighRisk(
        context,
        `i2c write bus ${bus} ${hexByte(address)}${register === undefined ? "" : ` reg ${hexByte(register)}`}: ${toHex(bytes)}`,
      );
    }
    const length = input.length ?? 1;
    if (input.action === "read" && (length < 1 || length > MAX_LENGTH))
      throw new ToolError("i2c.invalid_length", `length ${length} is out of range 1–${MAX_LENGTH}.`);
    try {
      const handle = await hardware.i2c.open(bus);
      try {
        switch (input.action) {
          case "scan": {
            const found = await handle.scan(FIRST_ADDRESS, LAST_ADDRESS);
            return { bus, addresses: found.map(hexByte) };
          }
          case "read": {
            const data =
              register === undefined
                ? await handle.read(address, length)
                : await handle.readRegister(address, register, length);
            return {
              bus,
              address: hexByte(address),
              ...(register === undefined ? {} : { register: hexByte(register) }),
              data: toHex(data),
            };
          }
          case "write":
            if (register === undefined) await handle.write(address, bytes!);
            else await handle.writeRegister(address, register, bytes!);
            return { bus, address: hexByte(address), written: bytes!.length };
        }
      } finally {
        await handle.close().catch(() => undefined);
      }
    } catch (error) {
      throw deviceError(error, "i2c.failed", `i2c ${input.action} on bus ${bus}`);
    }
  },
});

function checkedAddress(value: number | string | undefined): number {
  if (value === undefined) throw new ToolError("i2c.address_required", "Give `address` (0x03–0x77).");
  const address = parseNumber(value, "address");
  if (address < FIRST_ADDRESS || address > LAST_ADDRESS)
    throw new ToolError(
      "i2c.invalid_address",
      `Address ${hexByte(address)} is outside 0x03–0x77 (7-bit, reserved addresses excluded).`,
    );
  return address;
}

function byteOf(value: number): Buffer {
  if (value < 0 || value > 0xff) throw new ToolError("i2c.invalid_value", `${value} is not a byte (0–255).`);
  return Buffer.from([value]);
}
