/** A GPIO level: 0 or 1 as the wire carries it (active-low is applied above the port). */
export type Level = 0 | 1;

/** A bit as a level: 0 stays 0, anything else is 1 (XOR of two levels, a driver's number). */
export const toLevel = (bit: number): Level => (bit ? 1 : 0);

/** One requested GPIO line. */
export interface GpioLine {
  read(): Promise<Level>;
  write(value: Level): Promise<void>;
  /** Calls `listener` with the new raw level on every edge (both directions; filtering is the caller's). */
  onEdge(listener: (value: Level) => void): void;
  release(): void;
}

/** The narrow GPIO port: opens lines by number. Real: onoff over sysfs; tests: `MemoryGpio`. */
export interface Gpio {
  open(line: number, direction: "in" | "out", watchEdges: boolean): Promise<GpioLine>;
}
