import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { BoardConfig } from "../config/sections/hardware.js";
import { BOARD_FACTS } from "./boards.js";
import { listSysfsChips, type SysfsRoots } from "./sysfs-gpio.js";

/** Where /proc, /sys and /dev live (a temp tree in tests). */
export interface HostRoots extends SysfsRoots {
  proc: string;
}

export const REAL_HOST: HostRoots = { proc: "/proc", sys: "/sys", dev: "/dev" };

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

/** What this box shows right now: model, CPU, memory, GPIO chips, buses. */
export function hostFacts(roots: HostRoots = REAL_HOST, platform: NodeJS.Platform = process.platform) {
  if (platform !== "linux") return { platform, note: "live facts are read on Linux only" };
  // The device-tree model ends with a NUL byte.
  const model = readText(path.join(roots.proc, "device-tree/model"))?.replace(/\0/g, "").trim() ?? null;
  const cpuinfo = readText(path.join(roots.proc, "cpuinfo")) ?? "";
  const field = (name: string) =>
    // regex-dynamic: `name` is one of our own field names; the text is /proc/cpuinfo
    new RegExp(`^${name}\\s*:\\s*(.+)$`, "mi").exec(cpuinfo)?.[1]?.trim() ?? null;
  const memTotal = /^MemTotal:\s*(\d+) kB/m.exec(readText(path.join(roots.proc, "meminfo")) ?? "")?.[1];
  const dev = existsSync(roots.dev) ? readdirSync(roots.dev) : [];
  return {
    platform,
    model,
    cpu: field("model name") ?? field("Hardware") ?? field("cpu model"),
    hardware: field("Hardware"),
    revision: field("Revision"),
    cores: (cpuinfo.match(/^processor\s*:/gim) ?? []).length || null,
    memoryMb: memTotal ? Math.round(Number(memTotal) / 1024) : null,
    gpiochips: {
      sysfs: listSysfsChips(roots).map(({ name, base, ngpio, label }) => ({ name, base, ngpio, label })),
      dev: dev.filter((name) => /^gpiochip\d+$/.test(name)).sort(),
    },
    i2cBuses: dev.filter((name) => /^i2c-\d+$/.test(name)).sort(),
    spiDevices: dev.filter((name) => /^spidev\d+\.\d+$/.test(name)).sort(),
    serialDevices: dev
      .filter((name) => /^(ttyACM\d+|ttyUSB\d+|ttyAMA\d+|serial\d+|ttyS0)$/.test(name))
      .sort(),
  };
}

/** Static facts for a configured board plus how it is connected here. */
export function boardInfo(board: BoardConfig, roots: HostRoots = REAL_HOST) {
  const facts = BOARD_FACTS[board.type];
  return {
    name: board.name,
    type: board.type,
    ...facts,
    configured: {
      ...(board.port
        ? { port: board.port, portPresent: existsSync(board.port), baud: board.baud ?? 115_200 }
        : {}),
      ...(board.gpioChip ? { gpioChip: board.gpioChip } : {}),
      ...(board.type === "rpi-gpio"
        ? { i2cBus: board.i2cBus ?? 1, spiDevice: board.spiDevice ?? path.join(roots.dev, "spidev0.0") }
        : {}),
      ...(board.probe ? { probe: board.probe } : {}),
    },
  };
}
