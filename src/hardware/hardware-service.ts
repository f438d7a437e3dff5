import type { BoardConfig, HardwareConfig } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { type HostRoots, REAL_HOST } from "./board-info.js";
import { ProtocolGpio } from "./board-protocol.js";
import { isSerialBoard } from "./boards.js";
import { OnoffGpio } from "./gpio-onoff.js";
import type { Gpio } from "./gpio-port.js";
import { GpioService } from "./gpio-service.js";
import { NativeI2c } from "./i2c-native.js";
import type { I2cPort } from "./i2c-port.js";
import { findProgram, MemoryAccess } from "./memory-access.js";
import { nodeSerialBackend, type SerialBackend } from "./serial-backend.js";
import { SerialManager } from "./serial-manager.js";
import { NativeSpi } from "./spi-native.js";
import type { SpiPort } from "./spi-port.js";
import type { WatchEvents } from "./watch-events.js";

/** The ports behind the hardware tools; tests swap in the in-memory twins. */
export interface HardwarePorts {
  /** GPIO of an rpi-gpio board (default: onoff over sysfs). */
  gpio?: (board: BoardConfig) => Gpio;
  serial?: SerialBackend;
  i2c?: I2cPort;
  spi?: SpiPort;
  /** probe-rs' path (default: looked up on PATH); null forces the serial protocol. */
  probeRs?: string | null;
  probeRun?: (file: string, args: string[]) => Promise<string>;
  roots?: HostRoots;
  serialIdleMs?: number;
}

/** Everything the hardware tools reach through `context.services.hardware`. Native modules load on first use. */
export class HardwareService {
  readonly serial: SerialManager;
  readonly gpio: GpioService;
  readonly memory: MemoryAccess;
  readonly i2c: I2cPort;
  readonly spi: SpiPort;
  readonly roots: HostRoots;
  /** Set by the hardware feature once the app can deliver events. */
  events: WatchEvents | null = null;
  private readonly gpios = new Map<string, Gpio>();

  constructor(
    readonly config: HardwareConfig,
    ports: HardwarePorts = {},
    now: () => Date = () => new Date(),
  ) {
    this.roots = ports.roots ?? REAL_HOST;
    this.serial = new SerialManager({
      backend: ports.serial ?? nodeSerialBackend,
      boards: config.boards,
      ...(ports.serialIdleMs ? { idleMs: ports.serialIdleMs } : {}),
    });
    const gpioOfPi = ports.gpio ?? ((board: BoardConfig) => new OnoffGpio(board.gpioChip, this.roots));
    this.gpio = new GpioService(
      config,
      (board) => {
        let gpio = this.gpios.get(board.name);
        if (!gpio) {
          gpio = isSerialBoard(board) ? new ProtocolGpio(this.serial, board) : gpioOfPi(board);
          this.gpios.set(board.name, gpio);
        }
        return gpio;
      },
      now,
    );
    this.memory = new MemoryAccess({
      serial: this.serial,
      probeRs: ports.probeRs === undefined ? findProgram("probe-rs") : ports.probeRs,
      ...(ports.probeRun ? { run: ports.probeRun } : {}),
    });
    this.i2c = ports.i2c ?? new NativeI2c(this.roots.dev);
    this.spi = ports.spi ?? new NativeSpi(this.roots.dev);
  }

  /** A configured board by name; without a name, the only board of a kind that passes `filter`. */
  board(
    name: string | undefined,
    filter: (board: BoardConfig) => boolean = () => true,
    what = "board",
  ): BoardConfig {
    const candidates = this.config.boards.filter(filter);
    if (name) {
      const board = this.config.boards.find((candidate) => candidate.name === name);
      if (!board)
        throw new ToolError(
          "hardware.unknown_board",
          `Unknown board "${name}". Configured: ${this.config.boards.map((b) => b.name).join(", ") || "none"}.`,
        );
      if (!filter(board))
        throw new ToolError("hardware.not_supported", `Board "${name}" (${board.type}) has no ${what}.`);
      return board;
    }
    if (candidates.length === 1) return candidates[0]!;
    throw new ToolError(
      "hardware.board_required",
      candidates.length === 0
        ? `No configured board has ${what}.`
        : `Several boards have ${what} (${candidates.map((b) => b.name).join(", ")}): name one with \`board\`.`,
    );
  }

  /** Releases lines and closes ports (shutdown). */
  async close(): Promise<void> {
    await this.gpio.close();
    await this.serial.closeAll();
  }
}
