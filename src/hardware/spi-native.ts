import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { ToolError } from "../core/tool-error.js";
import { loadNative, requireLinux } from "./native.js";
import type { SpiDevice, SpiPort } from "./spi-port.js";

interface NativeSpiDevice {
  transfer(
    message: Array<{
      sendBuffer: Buffer;
      receiveBuffer: Buffer;
      byteLength: number;
      speedHz: number;
      bitsPerWord: number;
    }>,
    callback: (error: Error | null) => void,
  ): void;
  setOptions(
    options: { mode: number; bitsPerWord: number; maxSpeedHz: number },
    callback: (error: Error | null) => void,
  ): void;
  close(callback: (error: Error | null) => void): void;
}
interface SpiDeviceModule {
  open(
    bus: number,
    device: number,
    callback: (error: (Error & { code?: string }) | null) => void,
  ): NativeSpiDevice;
  MODE0: number;
  MODE1: number;
  MODE2: number;
  MODE3: number;
}

/** SPI through the `spi-device` module and /dev/spidevB.D. */
export class NativeSpi implements SpiPort {
  constructor(private readonly devDir = "/dev") {}

  devices(): string[] {
    if (!existsSync(this.devDir)) return [];
    return readdirSync(this.devDir)
      .filter((name) => /^spidev\d+\.\d+$/.test(name))
      .sort()
      .map((name) => path.join(this.devDir, name));
  }

  async open(devicePath: string): Promise<SpiDevice> {
    requireLinux("SPI");
    const match = /spidev(\d+)\.(\d+)$/.exec(devicePath);
    if (!match)
      throw new ToolError("spi.invalid_device", `${devicePath} is not an SPI device path (/dev/spidevB.D).`);
    const module = loadNative<SpiDeviceModule>("spi-device");
    const modes = [module.MODE0, module.MODE1, module.MODE2, module.MODE3];
    const device = await new Promise<NativeSpiDevice>((resolve, reject) => {
      const opened = module.open(Number(match[1]), Number(match[2]), (error) =>
        error ? reject(spiOpenFailure(devicePath, error)) : resolve(opened),
      );
    });
    const call = (run: (done: (error: Error | null) => void) => void) =>
      new Promise<void>((resolve, reject) => run((error) => (error ? reject(error) : resolve())));
    return {
      transfer: async (bytes, settings) => {
        await call((done) =>
          device.setOptions(
            {
              mode: modes[settings.mode] ?? 0,
              bitsPerWord: settings.bitsPerWord,
              maxSpeedHz: settings.speedHz,
            },
            done,
          ),
        );
        const receiveBuffer = Buffer.alloc(bytes.length);
        await call((done) =>
          device.transfer(
            [
              {
                sendBuffer: bytes,
                receiveBuffer,
                byteLength: bytes.length,
                speedHz: settings.speedHz,
                bitsPerWord: settings.bitsPerWord,
              },
            ],
            done,
          ),
        );
        return receiveBuffer;
      },
      close: () => call((done) => device.close(done)),
    };
  }
}

function spiOpenFailure(devicePath: string, error: Error & { code?: string }): ToolError {
  if (error.code === "ENOENT")
    return new ToolError(
      "spi.device_not_found",
      `${devicePath} does not exist. Enable SPI (sudo raspi-config → Interface Options → SPI, or dtparam=spi=on in /boot/firmware/config.txt) and reboot.`,
    );
  if (error.code === "EACCES" || error.code === "EPERM")
    return new ToolError(
      "spi.permission_denied",
      `No permission to open ${devicePath}. Add the user to the spi group (sudo usermod -aG spi $USER, or SupplementaryGroups=spi in the systemd unit).`,
    );
  return new ToolError("spi.open_failed", `Could not open ${devicePath}: ${error.message}`);
}
