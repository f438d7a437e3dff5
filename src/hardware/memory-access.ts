import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { BoardConfig } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import { boardRequest } from "./board-protocol.js";
import { BOARD_FACTS } from "./boards.js";
import { parseHex, toHex } from "./hex.js";
import type { SerialManager } from "./serial-manager.js";

export const MAX_MEMORY_LENGTH = 256;

/** Finds a program on PATH (null when absent). */
export function findProgram(name: string, searchPath = process.env.PATH ?? ""): string | null {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** Checks an address range is 32-bit and at most 256 bytes long. */
export function checkRange(address: number, length: number): void {
  if (!Number.isInteger(address) || address < 0 || address > 0xffff_ffff)
    throw new ToolError(
      "memory.invalid_address",
      `Address ${address} is not a 32-bit address (0 … 0xffffffff).`,
    );
  if (!Number.isInteger(length) || length < 1 || length > MAX_MEMORY_LENGTH)
    throw new ToolError(
      "memory.invalid_length",
      `Length ${length} is out of range: 1 … ${MAX_MEMORY_LENGTH} bytes.`,
    );
  if (address + length > 0x1_0000_0000)
    throw new ToolError("memory.invalid_address", "The range runs past the end of the 32-bit address space.");
}

export interface MemoryAccessOptions {
  serial: SerialManager;
  /** probe-rs' path, or null to use the serial protocol. */
  probeRs: string | null;
  run?: (file: string, args: string[]) => Promise<string>;
}

const runFile = (file: string, args: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile(file, args, { timeout: 20_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${error.message}\n${stderr}`.trim())) : resolve(stdout),
    ),
  );

/** Reads and writes a Nucleo's memory: through probe-rs (SWD) when installed, else the sketch's mem_* commands. */
export class MemoryAccess {
  constructor(private readonly options: MemoryAccessOptions) {}

  via(): "probe-rs" | "serial" {
    return this.options.probeRs ? "probe-rs" : "serial";
  }

  async read(board: BoardConfig, address: number, length: number): Promise<{ data: string; via: string }> {
    checkRange(address, length);
    if (this.options.probeRs) {
      const out = await this.probeRs(board, ["read", "b8", hex32(address), String(length)]);
      const bytes = out.match(/\b[0-9a-fA-F]{2}\b/g) ?? [];
      if (bytes.length < length)
        throw new ToolError(
          "memory.probe_failed",
          `probe-rs answered with ${bytes.length} of ${length} bytes: ${out.slice(0, 200)}`,
        );
      return { data: bytes.slice(0, length).join(" ").toLowerCase(), via: "probe-rs" };
    }
    const answer = await boardRequest(this.options.serial, board, { cmd: "mem_read", address, length });
    const data = parseHex(String(answer.data ?? ""), "the board's data");
    return { data: toHex(data.subarray(0, length)), via: "serial" };
  }

  async write(board: BoardConfig, address: number, bytes: Buffer): Promise<{ written: number; via: string }> {
    checkRange(address, bytes.length);
    if (this.options.probeRs) {
      await this.probeRs(board, [
        "write",
        "b8",
        hex32(address),
        ...[...bytes].map((byte) => `0x${byte.toString(16)}`),
      ]);
      return { written: bytes.length, via: "probe-rs" };
    }
    await boardRequest(this.options.serial, board, {
      cmd: "mem_write",
      address,
      data: toHex(bytes).replace(/ /g, ""),
    });
    return { written: bytes.length, via: "serial" };
  }

  private async probeRs(board: BoardConfig, args: string[]): Promise<string> {
    const chip = BOARD_FACTS[board.type].probeChip;
    if (!chip)
      throw new ToolError("memory.not_supported", `Memory access on a ${board.type} is not supported.`);
    const full = [
      ...args.slice(0, 1),
      "--chip",
      chip,
      ...(board.probe ? ["--probe", board.probe] : []),
      ...args.slice(1),
    ];
    try {
      return await (this.options.run ?? runFile)(this.options.probeRs!, full);
    } catch (error) {
      throw new ToolError(
        "memory.probe_failed",
        `probe-rs failed: ${errorMessage(error).slice(0, 400)}. Is the board's ST-LINK connected (and the udev rules for probe-rs installed)?`,
      );
    }
  }
}

function hex32(value: number): string {
  return `0x${value.toString(16).padStart(8, "0")}`;
}
