import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ToolError } from "../../src/core/tool-error.js";
import { hostFacts } from "../../src/hardware/board-info.js";
import { requireLinux } from "../../src/hardware/native.js";
import { checkGpioAccess, listSysfsChips, sysfsNumber } from "../../src/hardware/sysfs-gpio.js";

/** BCM line → sysfs number against fake /sys/class/gpio trees laid out like current Pi kernels. */

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function fakeHost(chips: Array<{ base: number; ngpio: number; label: string }>, devChips = chips.length) {
  const root = mkdtempSync(path.join(tmpdir(), "magpie-sysfs-"));
  roots.push(root);
  const gpio = path.join(root, "sys/class/gpio");
  mkdirSync(gpio, { recursive: true });
  if (chips.length > 0) writeFileSync(path.join(gpio, "export"), "");
  for (const chip of chips) {
    const dir = path.join(gpio, `gpiochip${chip.base}`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, "base"), `${chip.base}\n`);
    writeFileSync(path.join(dir, "ngpio"), `${chip.ngpio}\n`);
    writeFileSync(path.join(dir, "label"), `${chip.label}\n`);
  }
  mkdirSync(path.join(root, "dev"));
  for (let index = 0; index < devChips; index++)
    writeFileSync(path.join(root, "dev", `gpiochip${index}`), "");
  mkdirSync(path.join(root, "proc/device-tree"), { recursive: true });
  return { sys: path.join(root, "sys"), dev: path.join(root, "dev"), proc: path.join(root, "proc"), root };
}

function codeOf(run: () => unknown): string {
  try {
    run();
    return "none";
  } catch (error) {
    return error instanceof ToolError ? `${error.code}: ${error.message}` : String(error);
  }
}

describe("sysfs GPIO numbering", () => {
  it("Pi 4 on a 6.6 kernel: the SoC chip sits at 512, so BCM 17 is 529", () => {
    const host = fakeHost([
      { base: 512, ngpio: 58, label: "pinctrl-bcm2711" },
      { base: 570, ngpio: 8, label: "raspberrypi-exp-gpio" },
    ]);
    expect(sysfsNumber(17, host)).toBe(529);
    expect(listSysfsChips(host).map((chip) => chip.name)).toEqual(["gpiochip512", "gpiochip570"]);
  });

  it("Pi 5: the RP1's pinctrl at 571 is picked over a lower-based chip", () => {
    const host = fakeHost([
      { base: 512, ngpio: 32, label: "gpio-brcmstb@107d508500" },
      { base: 544, ngpio: 4, label: "gpio-brcmstb@107d517c00" },
      { base: 571, ngpio: 54, label: "pinctrl-rp1" },
    ]);
    expect(sysfsNumber(17, host)).toBe(588);
    expect(sysfsNumber(4, host, "gpiochip512")).toBe(516);
    expect(sysfsNumber(4, host, "pinctrl-rp1")).toBe(575);
  });

  it("old kernels (base 0) map a line to itself; a line past the chip is refused", () => {
    const host = fakeHost([{ base: 0, ngpio: 54, label: "pinctrl-bcm2835" }]);
    expect(sysfsNumber(27, host)).toBe(27);
    expect(codeOf(() => sysfsNumber(60, host))).toMatch(/^gpio.invalid_line/);
  });

  it("an unknown configured chip names the ones that exist", () => {
    const host = fakeHost([{ base: 512, ngpio: 58, label: "pinctrl-bcm2711" }]);
    expect(codeOf(() => sysfsNumber(1, host, "gpiochip0"))).toMatch(
      /^gpio.chip_not_found: .*gpiochip512 "pinctrl-bcm2711"/,
    );
  });

  it("no sysfs GPIO but /dev/gpiochip*: names CONFIG_GPIO_SYSFS and the gpioget/gpioset fallback", () => {
    const host = fakeHost([], 2);
    const message = codeOf(() => sysfsNumber(17, host));
    expect(message).toMatch(/^gpio.sysfs_missing/);
    expect(message).toMatch(/CONFIG_GPIO_SYSFS/);
    expect(message).toMatch(/gpioget/);
    expect(checkGpioAccess(host)?.code).toBe("gpio.sysfs_missing");
  });

  it("no permission on /sys/class/gpio/export: 'add the user to the gpio group'", () => {
    const host = fakeHost([{ base: 512, ngpio: 58, label: "pinctrl-bcm2711" }]);
    const problem = checkGpioAccess(host, () => false);
    expect(problem?.code).toBe("gpio.permission_denied");
    expect(problem?.message).toMatch(/add the user to the gpio group/i);
    expect(checkGpioAccess(host, () => true)).toBeNull();
  });
});

describe("host facts and platform guards", () => {
  it("reads the model, CPU, memory and chips from /proc and /sys", () => {
    const host = fakeHost([{ base: 512, ngpio: 58, label: "pinctrl-bcm2711" }]);
    writeFileSync(path.join(host.proc, "device-tree/model"), "Raspberry Pi 4 Model B Rev 1.5\0");
    writeFileSync(
      path.join(host.proc, "cpuinfo"),
      "processor\t: 0\nprocessor\t: 1\nHardware\t: BCM2835\nRevision\t: d03115\n",
    );
    writeFileSync(path.join(host.proc, "meminfo"), "MemTotal:        8000000 kB\n");
    writeFileSync(path.join(host.dev, "i2c-1"), "");
    const facts = hostFacts(host, "linux") as Record<string, unknown>;
    expect(facts).toMatchObject({
      model: "Raspberry Pi 4 Model B Rev 1.5",
      hardware: "BCM2835",
      revision: "d03115",
      cores: 2,
      memoryMb: 7813,
      i2cBuses: ["i2c-1"],
    });
  });

  it("non-Linux: live facts and device access say Linux only", () => {
    expect(hostFacts(undefined, "darwin")).toEqual({
      platform: "darwin",
      note: "live facts are read on Linux only",
    });
    expect(codeOf(() => requireLinux("GPIO", "darwin"))).toMatch(
      /^hardware.not_linux: GPIO works on Linux only \(this box runs darwin\)/,
    );
  });
});
