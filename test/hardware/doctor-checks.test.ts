import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { hardwareChecks } from "../../src/hardware/device-checks.js";
import { startTestApp } from "../helpers/harness.js";

/** `magpie doctor`'s hardware lines against a fake Pi 5 tree, and start-up refusals. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function hardware(input: ConfigInput["hardware"]) {
  return parseConfig({ hardware: input }, { env: {}, cwd: "/tmp" }).hardware;
}

describe("doctor hardware checks", () => {
  it("one line per interface: GPIO mapping, a missing default I2C bus is a skip, a missing serial port a failure", () => {
    const root = mkdtempSync(path.join(tmpdir(), "magpie-doctor-hw-"));
    dirs.push(root);
    const chip = path.join(root, "sys/class/gpio/gpiochip571");
    mkdirSync(chip, { recursive: true });
    writeFileSync(path.join(root, "sys/class/gpio/export"), "");
    writeFileSync(path.join(chip, "base"), "571");
    writeFileSync(path.join(chip, "ngpio"), "54");
    writeFileSync(path.join(chip, "label"), "pinctrl-rp1");
    mkdirSync(path.join(root, "dev"));
    writeFileSync(path.join(root, "dev/spidev0.0"), "");
    const checks = hardwareChecks(
      hardware({
        boards: [
          { name: "pi", type: "rpi-gpio" },
          { name: "uno", type: "arduino-uno", port: path.join(root, "dev/ttyACM0") },
        ],
        pins: { door: { board: "pi", line: 17, direction: "in" } },
      }),
      { sys: path.join(root, "sys"), dev: path.join(root, "dev"), proc: path.join(root, "proc") },
      "linux",
      false,
    );
    expect(checks.map((check) => [check.name, check.verdict])).toEqual([
      ["hardware pi gpio", "ok"],
      ["hardware pi i2c", "skip"],
      ["hardware pi spi", "ok"],
      ["hardware uno serial", "fail"],
    ]);
    expect(checks[0]?.detail).toMatch(/door BCM 17 → gpio588/);
    expect(checks[3]?.detail).toMatch(/does not exist/);
  });

  it("a Pi board on a non-Linux box fails with the reason", () => {
    const checks = hardwareChecks(
      hardware({ boards: [{ name: "pi", type: "rpi-gpio" }] }),
      undefined,
      "darwin",
      false,
    );
    expect(checks).toEqual([
      expect.objectContaining({ verdict: "fail", detail: expect.stringMatching(/needs Linux/) }),
    ]);
  });
});

describe("hardware start-up", () => {
  it("a watch that asks for Pushover without Pushover configured stops start-up", async () => {
    await expect(
      startTestApp({
        features,
        llm: false,
        config: {
          hardware: {
            boards: [{ name: "pi", type: "rpi-gpio" }],
            pins: { door: { line: 17, direction: "in", edge: "both" } },
            watch: [{ pin: "door", notify: { pushover: true } }],
          },
        },
      }),
    ).rejects.toThrow(/notify.pushover is true but notify.pushover.token\/user are not set/);
  });
});
