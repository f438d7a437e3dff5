import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { ConfigError } from "../../src/lib/errors.js";

/** `hardware` validation: what isn't supported is refused with a reason, never accepted and ignored. */

function problems(hardware: ConfigInput["hardware"]): string {
  try {
    parseConfig({ hardware }, { env: {}, cwd: "/tmp" });
    return "";
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join("\n");
    throw error;
  }
}

describe("hardware config", () => {
  it("accepts the DESIGN shape", () => {
    expect(
      problems({
        boards: [
          {
            name: "pi",
            type: "rpi-gpio",
            gpioChip: "pinctrl-bcm2711",
            i2cBus: 1,
            spiDevice: "/dev/spidev0.0",
          },
          { name: "uno", type: "arduino-uno", port: "/dev/ttyACM0", baud: 115200 },
          { name: "nucleo", type: "nucleo-f411re", port: "/dev/ttyACM1", probe: "0483:374b" },
        ],
        pins: {
          door: { line: 17, direction: "in", edge: "both", debounceMs: 50, activeLow: true },
          led: { board: "uno", line: 13, direction: "out" },
        },
        watch: [{ pin: "door", notify: { channel: "telegram", chat_id: 42 }, prompt: "Check the door." }],
      }),
    ).toBe("");
  });

  it("refuses unknown board types and keys, and a serial board without a port", () => {
    expect(problems({ boards: [{ name: "x", type: "raspberry-pi" as "rpi-gpio" }] })).toMatch(/type/);
    expect(problems({ boards: [{ name: "x", type: "rpi-gpio", serialPorts: ["/dev/x"] } as never] })).toMatch(
      /serialPorts/,
    );
    expect(problems({ boards: [{ name: "uno", type: "arduino-uno" }] })).toMatch(/needs `port`/);
    expect(problems({ boards: [{ name: "esp", type: "esp32", port: "/dev/x", i2cBus: 1 }] })).toMatch(
      /only rpi-gpio boards take i2cBus/,
    );
    expect(problems({ boards: [{ name: "pi", type: "rpi-gpio", probe: "x" }] })).toMatch(
      /only nucleo boards take probe/,
    );
  });

  it("refuses what is not supported yet: edges on serial-board pins", () => {
    expect(
      problems({
        boards: [{ name: "uno", type: "arduino-uno", port: "/dev/ttyACM0" }],
        pins: { button: { line: 2, direction: "in", edge: "falling" } },
      }),
    ).toMatch(/not supported yet/);
  });

  it("refuses watches of unknown pins, pins without an edge, and watches that notify nowhere", () => {
    const boards = [{ name: "pi", type: "rpi-gpio" as const }];
    expect(problems({ boards, watch: [{ pin: "nope", notify: { pushover: true } }] })).toMatch(
      /unknown pin "nope"/,
    );
    expect(
      problems({
        boards,
        pins: { door: { line: 4, direction: "in" } },
        watch: [{ pin: "door", notify: { pushover: true } }],
      }),
    ).toMatch(/needs an `edge`/);
    expect(
      problems({
        boards,
        pins: { door: { line: 4, direction: "in", edge: "both" } },
        watch: [{ pin: "door", notify: {} }],
      }),
    ).toMatch(/notify somewhere/);
    expect(
      problems({
        boards,
        pins: { door: { line: 4, direction: "in", edge: "both" } },
        watch: [{ pin: "door", notify: { pushover: true }, prompt: "x" }],
      }),
    ).toMatch(/a prompt needs notify.channel/);
  });

  it("refuses a pin on an unknown board and an out pin with an edge", () => {
    expect(
      problems({
        boards: [{ name: "pi", type: "rpi-gpio" }],
        pins: { a: { board: "zz", line: 1, direction: "in" } },
      }),
    ).toMatch(/unknown board "zz"/);
    expect(
      problems({
        boards: [{ name: "pi", type: "rpi-gpio" }],
        pins: { a: { line: 1, direction: "out", edge: "both" } },
      }),
    ).toMatch(/an `out` pin has no edge/);
  });
});
