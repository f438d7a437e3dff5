import { ToolError } from "../core/tool-error.js";
import { errorMessage } from "../lib/errors.js";
import { type Gpio, type GpioLine, toLevel } from "./gpio-port.js";
import { loadNative, requireLinux } from "./native.js";
import { checkGpioAccess, gpioPermission, REAL_ROOTS, type SysfsRoots, sysfsNumber } from "./sysfs-gpio.js";

interface OnoffPin {
  readSync(): number;
  writeSync(value: number): void;
  watch(callback: (error: Error | null | undefined, value: number) => void): void;
  unexport(): void;
}
interface OnoffModule {
  Gpio: new (
    gpio: number,
    direction: string,
    edge?: string,
    options?: { reconfigureDirection?: boolean },
  ) => OnoffPin;
}

/** GPIO on the host through onoff (sysfs), BCM lines mapped to sysfs numbers through the chip's base. */
export class OnoffGpio implements Gpio {
  constructor(
    private readonly chip: string | undefined,
    private readonly roots: SysfsRoots = REAL_ROOTS,
  ) {}

  async open(line: number, direction: "in" | "out", watchEdges: boolean): Promise<GpioLine> {
    requireLinux("GPIO");
    const number = sysfsNumber(line, this.roots, this.chip);
    const problem = checkGpioAccess(this.roots);
    if (problem) throw problem;
    const { Gpio } = loadNative<OnoffModule>("onoff");
    let pin: OnoffPin;
    try {
      // Edges are filtered above (active-low, debounce); sysfs delivers both.
      pin = new Gpio(number, direction, watchEdges ? "both" : "none", { reconfigureDirection: false });
    } catch (error) {
      throw gpioFailure(error, line, number);
    }
    return {
      read: async () => toLevel(pin.readSync()),
      write: async (value) => pin.writeSync(value),
      onEdge: (listener) =>
        pin.watch((error, value) => {
          if (!error) listener(toLevel(value));
        }),
      release: () => {
        try {
          pin.unexport();
        } catch {
          // Already gone (another process unexported it): nothing to release.
        }
      },
    };
  }
}

function gpioFailure(error: unknown, line: number, number: number): ToolError {
  const code = error instanceof Error && "code" in error ? error.code : undefined;
  if (code === "EACCES" || code === "EPERM") return gpioPermission(`/sys/class/gpio/gpio${number}`);
  return new ToolError(
    "gpio.open_failed",
    `Could not open BCM line ${line} (sysfs GPIO ${number}): ${errorMessage(error)}. Is the line used by another driver (I2C, SPI, 1-wire overlays)?`,
  );
}
