import { existsSync, readdirSync } from "node:fs";
import { ToolError } from "../core/tool-error.js";
import type { I2cBus, I2cPort } from "./i2c-port.js";
import { loadNative, requireLinux } from "./native.js";

interface PromisifiedBus {
  scan(first: number, last: number): Promise<number[]>;
  i2cRead(address: number, length: number, buffer: Buffer): Promise<{ bytesRead: number; buffer: Buffer }>;
  i2cWrite(address: number, length: number, buffer: Buffer): Promise<{ bytesWritten: number }>;
  readI2cBlock(
    address: number,
    command: number,
    length: number,
    buffer: Buffer,
  ): Promise<{ bytesRead: number; buffer: Buffer }>;
  writeI2cBlock(
    address: number,
    command: number,
    length: number,
    buffer: Buffer,
  ): Promise<{ bytesWritten: number }>;
  close(): Promise<void>;
}
interface I2cBusModule {
  openPromisified(bus: number): Promise<PromisifiedBus>;
}

/** I2C through the `i2c-bus` module and /dev/i2c-N. */
export class NativeI2c implements I2cPort {
  constructor(private readonly devDir = "/dev") {}

  buses(): number[] {
    if (!existsSync(this.devDir)) return [];
    return readdirSync(this.devDir)
      .flatMap((name) => /^i2c-(\d+)$/.exec(name)?.[1] ?? [])
      .map(Number)
      .sort((a, b) => a - b);
  }

  async open(bus: number): Promise<I2cBus> {
    requireLinux("I2C");
    const module = loadNative<I2cBusModule>("i2c-bus");
    const handle = await module.openPromisified(bus).catch((error: NodeJS.ErrnoException) => {
      throw i2cOpenFailure(bus, error);
    });
    return {
      scan: (first, last) => handle.scan(first, last),
      read: async (address, length) => {
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.i2cRead(address, length, buffer);
        return buffer.subarray(0, bytesRead);
      },
      write: async (address, bytes) => void (await handle.i2cWrite(address, bytes.length, bytes)),
      readRegister: async (address, register, length) => {
        const buffer = Buffer.alloc(length);
        const { bytesRead } = await handle.readI2cBlock(address, register, length, buffer);
        return buffer.subarray(0, bytesRead);
      },
      writeRegister: async (address, register, bytes) =>
        void (await handle.writeI2cBlock(address, register, bytes.length, bytes)),
      close: () => handle.close(),
    };
  }
}

function i2cOpenFailure(bus: number, error: NodeJS.ErrnoException): ToolError {
  if (error.code === "ENOENT")
    return new ToolError(
      "i2c.bus_not_found",
      `/dev/i2c-${bus} does not exist. Enable I2C (sudo raspi-config → Interface Options → I2C, or dtparam=i2c_arm=on in /boot/firmware/config.txt) and reboot.`,
    );
  if (error.code === "EACCES" || error.code === "EPERM")
    return new ToolError(
      "i2c.permission_denied",
      `No permission to open /dev/i2c-${bus}. Add the user to the i2c group (sudo usermod -aG i2c $USER, or SupplementaryGroups=i2c in the systemd unit).`,
    );
  return new ToolError("i2c.open_failed", `Could not open /dev/i2c-${bus}: ${error.message}`);
}
