import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { HardwareConfig } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import type { HostRoots } from "./board-info.js";
import { REAL_HOST } from "./board-info.js";
import { BOARD_FACTS, isSerialBoard } from "./boards.js";
import { findProgram } from "./memory-access.js";
import { loadNative, type NativeModule } from "./native.js";
import { checkGpioAccess, sysfsNumber } from "./sysfs-gpio.js";

/** One `magpie doctor` line. */
export interface DeviceCheck {
  name: string;
  verdict: "ok" | "fail" | "skip";
  detail: string;
  fix?: string;
}

const GROUP_FIX = (group: string) =>
  `sudo usermod -aG ${group} $USER (log in again), or SupplementaryGroups=${group} in the systemd unit`;

function deviceAccess(
  name: string,
  device: string,
  group: string,
  enable: string,
  optional: boolean,
): DeviceCheck {
  if (!existsSync(device))
    return optional
      ? {
          name,
          verdict: "skip",
          detail: `${device} not present (only the ${group} tool needs it)`,
          fix: enable,
        }
      : { name, verdict: "fail", detail: `${device} does not exist`, fix: enable };
  try {
    accessSync(device, constants.R_OK | constants.W_OK);
    return { name, verdict: "ok", detail: `${device} accessible` };
  } catch {
    return { name, verdict: "fail", detail: `${device} not accessible (permission)`, fix: GROUP_FIX(group) };
  }
}

function moduleCheck(name: string, module: NativeModule): DeviceCheck {
  try {
    loadNative(module);
    return { name, verdict: "ok", detail: `${module} module loads` };
  } catch (error) {
    return {
      name,
      verdict: "fail",
      detail: error instanceof ToolError ? error.message : String(error),
      fix: `npm install ${module} (build tools: apt install build-essential python3)`,
    };
  }
}

/** Device access per configured board: what the hardware tools will find on this box. */
export function hardwareChecks(
  hardware: HardwareConfig,
  roots: HostRoots = REAL_HOST,
  platform: NodeJS.Platform = process.platform,
  loadModules = true,
): DeviceCheck[] {
  return hardware.boards.flatMap((board): DeviceCheck[] => {
    const name = `hardware ${board.name}`;
    const checks: DeviceCheck[] = [];
    if (board.type === "rpi-gpio") {
      if (platform !== "linux")
        return [
          {
            name,
            verdict: "fail",
            detail: `rpi-gpio needs Linux (this is ${platform})`,
            fix: "run Magpie on the Pi",
          },
        ];
      const problem = checkGpioAccess(roots);
      if (problem)
        checks.push({ name: `${name} gpio`, verdict: "fail", detail: problem.message, fix: problem.message });
      else {
        const pins = Object.entries(hardware.pins).filter(
          ([, pin]) => (pin.board ?? board.name) === board.name,
        );
        try {
          const mapped = pins
            .slice(0, 3)
            .map(
              ([pinName, pin]) =>
                `${pinName} BCM ${pin.line} → gpio${sysfsNumber(pin.line, roots, board.gpioChip)}`,
            );
          checks.push({
            name: `${name} gpio`,
            verdict: "ok",
            detail: `sysfs GPIO writable${mapped.length ? `; ${mapped.join(", ")}` : ""}`,
          });
        } catch (error) {
          checks.push({
            name: `${name} gpio`,
            verdict: "fail",
            detail: errorMessage(error),
            fix: "fix hardware.boards[].gpioChip or the pin's line",
          });
        }
      }
      if (loadModules) checks.push(moduleCheck(`${name} gpio`, "onoff"));
      const enableI2c = "sudo raspi-config → Interface Options → I2C (or dtparam=i2c_arm=on), then reboot";
      const enableSpi = "sudo raspi-config → Interface Options → SPI (or dtparam=spi=on), then reboot";
      checks.push(
        deviceAccess(
          `${name} i2c`,
          path.join(roots.dev, `i2c-${board.i2cBus ?? 1}`),
          "i2c",
          enableI2c,
          board.i2cBus === undefined,
        ),
      );
      checks.push(
        deviceAccess(
          `${name} spi`,
          board.spiDevice ?? path.join(roots.dev, "spidev0.0"),
          "spi",
          enableSpi,
          board.spiDevice === undefined,
        ),
      );
    }
    if (board.port) {
      checks.push(
        deviceAccess(
          `${name} serial`,
          board.port,
          "dialout",
          "plug the board in, or fix hardware.boards[].port (ls /dev/serial/by-id)",
          false,
        ),
      );
      if (loadModules) checks.push(moduleCheck(`${name} serial`, "serialport"));
    }
    if (isSerialBoard(board) && BOARD_FACTS[board.type].capabilities.memory) {
      const probeRs = findProgram("probe-rs");
      checks.push(
        probeRs
          ? { name: `${name} memory`, verdict: "ok", detail: `probe-rs at ${probeRs}` }
          : {
              name: `${name} memory`,
              verdict: "skip",
              detail: "probe-rs not installed: memory goes through the sketch's serial protocol",
              fix: "install probe-rs (probe.rs) for SWD access",
            },
      );
    }
    return checks;
  });
}
