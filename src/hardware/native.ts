import { createRequire } from "node:module";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";

const require = createRequire(import.meta.url);

/** The optional native modules behind the hardware tools. */
export type NativeModule = "serialport" | "onoff" | "i2c-bus" | "spi-device";

const loaded = new Map<NativeModule, unknown>();

/**
 * Loads an optional native module on first use: a box without it (or macOS) still starts, and the tool that
 * needs it says what is missing.
 */
export function loadNative<Module>(name: NativeModule): Module {
  const cached = loaded.get(name);
  if (cached) return cached as Module;
  try {
    const module = require(name) as Module;
    loaded.set(name, module);
    return module;
  } catch (error) {
    throw new ToolError(
      "hardware.module_missing",
      `The optional module '${name}' is not installed or did not build (${errorMessage(error).split("\n")[0]}). Install it on the box with \`npm install ${name}\` (needs build tools: apt install build-essential python3).`,
    );
  }
}

/** Guards Linux-only device access (GPIO sysfs, /dev/i2c-*, /dev/spidev*). */
export function requireLinux(what: string, platform: NodeJS.Platform = process.platform): void {
  if (platform !== "linux")
    throw new ToolError(
      "hardware.not_linux",
      `${what} works on Linux only (this box runs ${platform}). Run Magpie on the Raspberry Pi itself.`,
    );
}
