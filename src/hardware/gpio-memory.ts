import type { Gpio, GpioLine, Level } from "./gpio-port.js";

/** In-memory GPIO chip for tests: inputs driven with `drive`, outputs recorded, edges delivered. */
export class MemoryGpio implements Gpio {
  readonly levels = new Map<number, Level>();
  readonly directions = new Map<number, "in" | "out">();
  /** Every write as [line, level], in order. */
  readonly writes: Array<[number, Level]> = [];
  private readonly listeners = new Map<number, Array<(value: Level) => void>>();

  async open(line: number, direction: "in" | "out", watchEdges: boolean): Promise<GpioLine> {
    this.directions.set(line, direction);
    if (!this.levels.has(line)) this.levels.set(line, 0);
    const mine: Array<(value: Level) => void> = [];
    return {
      read: async () => this.levels.get(line) ?? 0,
      write: async (value) => {
        if (this.directions.get(line) !== "out") throw new Error(`EPERM: line ${line} is an input`);
        this.levels.set(line, value);
        this.writes.push([line, value]);
      },
      onEdge: (listener) => {
        if (!watchEdges) throw new Error(`line ${line} was opened without edges`);
        mine.push(listener);
        this.listeners.set(line, [...(this.listeners.get(line) ?? []), listener]);
      },
      release: () => {
        this.listeners.set(
          line,
          (this.listeners.get(line) ?? []).filter((listener) => !mine.includes(listener)),
        );
      },
    };
  }

  /** Sets an input's level as the outside world would; an actual change is an edge. */
  drive(line: number, value: Level): void {
    const before = this.levels.get(line) ?? 0;
    this.levels.set(line, value);
    if (before === value) return;
    for (const listener of this.listeners.get(line) ?? []) listener(value);
  }
}
