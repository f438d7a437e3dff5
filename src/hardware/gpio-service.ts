import type { BoardConfig, HardwareConfig, PinConfig } from "../config/sections/hardware.js";
import { pinBoard } from "../config/sections/hardware.js";
import { ToolError } from "../core/tool-error.js";
import { type Gpio, type GpioLine, type Level, toLevel } from "./gpio-port.js";

/** A debounced edge on a named pin (logical value: active-low already applied). */
export interface PinEdge {
  pin: string;
  value: Level;
  edge: "rising" | "falling";
  at: Date;
}

interface OpenLine {
  line: GpioLine;
  timer: NodeJS.Timeout | null;
  last: Level | null;
}

/** Named pins from `hardware.pins` over the boards' GPIO ports: direction, active-low, edges, debounce. */
export class GpioService {
  private readonly lines = new Map<string, Promise<OpenLine>>();
  private readonly listeners: Array<(edge: PinEdge) => void> = [];

  constructor(
    private readonly hardware: HardwareConfig,
    private readonly gpioOf: (board: BoardConfig) => Gpio,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The declared pins. */
  list(): Array<{ name: string; board: string; line: number } & Omit<PinConfig, "board" | "line">> {
    return Object.entries(this.hardware.pins).map(([name, pin]) => ({
      name,
      board: this.boardOf(name, pin).name,
      line: pin.line,
      direction: pin.direction,
      activeLow: pin.activeLow,
      ...(pin.edge ? { edge: pin.edge } : {}),
      debounceMs: pin.debounceMs,
    }));
  }

  /** The pin's logical value. */
  async read(name: string): Promise<Level> {
    const pin = this.pin(name);
    const open = await this.open(name);
    return toLevel((await open.line.read()) ^ (pin.activeLow ? 1 : 0));
  }

  /** Throws unless `name` is a declared `out` pin. */
  checkWritable(name: string): PinConfig {
    const pin = this.pin(name);
    if (pin.direction !== "out")
      throw new ToolError(
        "gpio.not_output",
        `Pin "${name}" is declared \`direction: in\`; only pins declared \`out\` in hardware.pins can be written.`,
      );
    return pin;
  }

  /** Sets an `out` pin's logical value. */
  async write(name: string, value: Level): Promise<void> {
    const pin = this.checkWritable(name);
    const open = await this.open(name);
    await open.line.write(toLevel(value ^ (pin.activeLow ? 1 : 0)));
  }

  /** Calls `listener` on every debounced edge of a pin with `edge` set, once its line is watched. */
  onEdge(listener: (edge: PinEdge) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  /** Starts delivering a pin's edges (idempotent); the pin needs `edge` in hardware.pins. */
  async watch(name: string): Promise<void> {
    const pin = this.pin(name);
    if (!pin.edge)
      throw new ToolError(
        "gpio.no_edge",
        `Pin "${name}" has no \`edge\` in hardware.pins (rising, falling or both): it can't be watched.`,
      );
    await this.open(name);
  }

  /** Releases every line (shutdown). */
  async close(): Promise<void> {
    const lines = [...this.lines.values()];
    this.lines.clear();
    for (const pending of lines) {
      const open = await pending.catch(() => null);
      if (!open) continue;
      if (open.timer) clearTimeout(open.timer);
      open.line.release();
    }
  }

  private pin(name: string): PinConfig {
    const pin = this.hardware.pins[name];
    if (!pin)
      throw new ToolError(
        "gpio.unknown_pin",
        `Unknown pin "${name}". Declared pins: ${Object.keys(this.hardware.pins).join(", ") || "none (add them to hardware.pins)"}.`,
      );
    return pin;
  }

  private boardOf(name: string, pin: PinConfig): BoardConfig {
    const board = pinBoard(this.hardware.boards, pin.board);
    if (!board) throw new ToolError("gpio.unknown_board", `Pin "${name}" names no configured board.`);
    return board;
  }

  private open(name: string): Promise<OpenLine> {
    const existing = this.lines.get(name);
    if (existing) return existing;
    const pin = this.pin(name);
    const opening = this.gpioOf(this.boardOf(name, pin))
      .open(pin.line, pin.direction, pin.edge !== undefined)
      .then((line) => {
        const open: OpenLine = { line, timer: null, last: null };
        if (pin.edge) {
          void line.read().then((raw) => {
            open.last ??= toLevel(raw ^ (pin.activeLow ? 1 : 0));
          });
          line.onEdge((raw) => this.raw(name, pin, open, raw));
        }
        return open;
      });
    // A failed open is not cached: the next call tries again (after the owner fixed permissions).
    opening.catch(() => this.lines.delete(name));
    this.lines.set(name, opening);
    return opening;
  }

  private raw(name: string, pin: PinConfig, open: OpenLine, raw: Level): void {
    const settle = (value: Level) => {
      if (value === open.last) return;
      open.last = value;
      const edge = value === 1 ? "rising" : "falling";
      if (pin.edge !== "both" && pin.edge !== edge) return;
      for (const listener of [...this.listeners]) listener({ pin: name, value, edge, at: this.now() });
    };
    const logical = (level: Level) => toLevel(level ^ (pin.activeLow ? 1 : 0));
    if (pin.debounceMs === 0) {
      settle(logical(raw));
      return;
    }
    // Debounce: act on the level that is still there once the line has been quiet for debounceMs.
    if (open.timer) clearTimeout(open.timer);
    open.timer = setTimeout(() => {
      open.timer = null;
      void open.line.read().then((level) => settle(logical(level)));
    }, pin.debounceMs);
  }
}
