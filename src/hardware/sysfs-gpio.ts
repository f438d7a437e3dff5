import { accessSync, constants, existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ToolError } from "../core/tool-error.js";

/** A GPIO chip as sysfs shows it under /sys/class/gpio/gpiochip<base>. */
export interface SysfsGpioChip {
  /** The directory name, e.g. gpiochip512. */
  name: string;
  base: number;
  ngpio: number;
  label: string;
}

/** Where sysfs and /dev live (a temp tree in tests). */
export interface SysfsRoots {
  sys: string;
  dev: string;
}

export const REAL_ROOTS: SysfsRoots = { sys: "/sys", dev: "/dev" };

// The SoC's own controller: its line n is BCM GPIO n (Pi 1–4: pinctrl-bcm*, Pi 5: the RP1's pinctrl-rp1).
const SOC_LABEL = /^pinctrl-(bcm\d+|rp1)$|^raspberrypi-exp-gpio$/;

/** The GPIO chips under /sys/class/gpio, lowest base first. */
export function listSysfsChips(roots: SysfsRoots = REAL_ROOTS): SysfsGpioChip[] {
  const dir = path.join(roots.sys, "class/gpio");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => /^gpiochip\d+$/.test(name))
    .flatMap((name) => {
      try {
        const read = (file: string) => readFileSync(path.join(dir, name, file), "utf8").trim();
        return [
          { name, base: Number(read("base")), ngpio: Number(read("ngpio") || "0"), label: read("label") },
        ];
      } catch {
        return [];
      }
    })
    .sort((a, b) => a.base - b.base);
}

/**
 * The chip BCM lines are numbered on: the configured one (directory name or label), else the SoC's pinctrl,
 * else the lowest base.
 */
export function socChip(chips: readonly SysfsGpioChip[], configured?: string): SysfsGpioChip {
  if (configured) {
    const chip = chips.find((candidate) => candidate.name === configured || candidate.label === configured);
    if (!chip)
      throw new ToolError(
        "gpio.chip_not_found",
        `hardware.boards[].gpioChip "${configured}" is not under /sys/class/gpio (there: ${chips.map((c) => `${c.name} "${c.label}"`).join(", ") || "none"}).`,
      );
    return chip;
  }
  const chip = chips.find((candidate) => SOC_LABEL.test(candidate.label)) ?? chips[0];
  if (!chip) throw missingSysfs();
  return chip;
}

/**
 * The sysfs GPIO number of a BCM line: chip base + line (current Pi kernels put the SoC's chip at 512 or 571,
 * so BCM 17 is 529 or 588, not 17).
 */
export function sysfsNumber(line: number, roots: SysfsRoots = REAL_ROOTS, configured?: string): number {
  const chips = listSysfsChips(roots);
  if (chips.length === 0) throw missingSysfs(roots);
  const chip = socChip(chips, configured);
  if (chip.ngpio > 0 && line >= chip.ngpio)
    throw new ToolError(
      "gpio.invalid_line",
      `Line ${line} is past ${chip.name} ("${chip.label}", ${chip.ngpio} lines).`,
    );
  return chip.base + line;
}

/** Why sysfs GPIO can't be used here, and what to do. */
export function missingSysfs(roots: SysfsRoots = REAL_ROOTS): ToolError {
  const hasCharDev =
    existsSync(roots.dev) && readdirSync(roots.dev).some((name) => /^gpiochip\d+$/.test(name));
  return new ToolError(
    "gpio.sysfs_missing",
    hasCharDev
      ? "This kernel has GPIO chips (/dev/gpiochip*) but no sysfs GPIO (/sys/class/gpio): it was built without CONFIG_GPIO_SYSFS. Use a kernel with CONFIG_GPIO_SYSFS=y (Raspberry Pi OS has it), or the libgpiod tools (`gpioget`/`gpioset`, apt install gpiod) through the shell tool."
      : "No GPIO on this box: neither /sys/class/gpio nor /dev/gpiochip* exists. On a Raspberry Pi, check the kernel (CONFIG_GPIO_SYSFS) and that this is the Pi itself, not a container without /sys/class/gpio mounted.",
  );
}

/** Whether this user may write sysfs GPIO; a ToolError naming the fix when not. */
export function checkGpioAccess(
  roots: SysfsRoots = REAL_ROOTS,
  canWrite: (file: string) => boolean = writable,
): ToolError | null {
  const exportFile = path.join(roots.sys, "class/gpio/export");
  if (!existsSync(exportFile)) return missingSysfs(roots);
  return canWrite(exportFile) ? null : gpioPermission(exportFile);
}

function writable(file: string): boolean {
  try {
    accessSync(file, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** The permission error for GPIO, with the fix. */
export function gpioPermission(file: string): ToolError {
  return new ToolError(
    "gpio.permission_denied",
    `No permission to use GPIO (${file}). Add the user to the gpio group (sudo usermod -aG gpio $USER, then log in again, or SupplementaryGroups=gpio in the systemd unit).`,
  );
}
