import { afterEach, describe, expect, it } from "vitest";
import { MemoryGpio } from "../../src/hardware/gpio-memory.js";
import { MemoryI2c } from "../../src/hardware/i2c-port.js";
import { MemorySpi } from "../../src/hardware/spi-port.js";
import { codeOf, type HardwareHarness, hardwareHarness } from "./hardware-harness.js";

/** The hardware tools through the registry, over the in-memory GPIO chip, I2C bus and SPI device. */

const PI = {
  boards: [{ name: "pi", type: "rpi-gpio" as const }],
  pins: {
    led: { line: 17, direction: "out" as const },
    relay: { line: 27, direction: "out" as const, activeLow: true },
    door: { line: 22, direction: "in" as const, edge: "both" as const },
  },
};

let harness: HardwareHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

function pi(options: Parameters<typeof hardwareHarness>[2] = {}) {
  const gpio = new MemoryGpio();
  const i2c = new MemoryI2c();
  const spi = new MemorySpi();
  harness = hardwareHarness(PI, { gpio: () => gpio, i2c, spi, probeRs: null }, options);
  return { harness, gpio, i2c, spi };
}

describe("tools offered per board", () => {
  it("a Pi gets board info, gpio, i2c and spi; no serial without a port, no memory", () => {
    const { harness } = pi();
    expect(harness.enabled().sort()).toEqual(["gpio", "hardware_board_info", "i2c", "spi"]);
  });

  it("a Nucleo gets serial, gpio (through its sketch) and memory; no i2c/spi", () => {
    harness = hardwareHarness(
      { boards: [{ name: "nucleo", type: "nucleo-f401re", port: "/dev/ttyACM0" }] },
      {},
    );
    expect(harness.enabled().sort()).toEqual(["gpio", "hardware_board_info", "hardware_memory", "serial"]);
  });

  it("no boards: no hardware tools at all", () => {
    harness = hardwareHarness({}, {});
    expect(harness.enabled()).toEqual([]);
  });
});

describe("gpio", () => {
  it("lists pins, writes out pins (active-low applied), reads them back", async () => {
    const { harness, gpio } = pi();
    const list = await harness.call("gpio", { action: "list" });
    expect((list.pins as Array<{ name: string }>).map((pin) => pin.name)).toEqual(["led", "relay", "door"]);
    expect(await harness.call("gpio", { action: "write", pin: "led", value: 1 })).toEqual({
      pin: "led",
      value: 1,
      written: true,
    });
    await harness.call("gpio", { action: "write", pin: "relay", value: 1 });
    expect(gpio.writes).toEqual([
      [17, 1],
      [27, 0],
    ]);
    expect(await harness.call("gpio", { action: "read", pin: "relay" })).toEqual({ pin: "relay", value: 1 });
    gpio.drive(22, 1);
    expect(await harness.call("gpio", { action: "read", pin: "door" })).toEqual({ pin: "door", value: 1 });
  });

  it("refuses an input pin, an unknown pin, a pin number and a missing value — with codes", async () => {
    const { harness, gpio } = pi();
    expect(codeOf(await harness.call("gpio", { action: "write", pin: "door", value: 1 }))).toBe(
      "gpio.not_output",
    );
    expect(codeOf(await harness.call("gpio", { action: "read", pin: "nope" }))).toBe("gpio.unknown_pin");
    expect(codeOf(await harness.call("gpio", { action: "read", pin: "17" }))).toBe("gpio.unknown_pin");
    expect(codeOf(await harness.call("gpio", { action: "write", pin: "led" }))).toBe("gpio.value_required");
    expect(codeOf(await harness.call("gpio", { action: "write", pin: "led", value: 2 }))).toBe(
      "tool.invalid_arguments",
    );
    expect(gpio.writes).toEqual([]);
  });

  it("a write is risk:high: asked for when required, nothing written when denied", async () => {
    const { harness, gpio } = pi({ require: ["risk:high"], decide: () => "denied" });
    await harness.call("gpio", { action: "read", pin: "led" });
    expect(harness.approvalRequests).toHaveLength(0);
    expect(codeOf(await harness.call("gpio", { action: "write", pin: "led", value: 1 }))).toBe(
      "approval.denied",
    );
    expect(harness.approvalRequests.map((request) => request.action)).toEqual(["gpio write led = 1"]);
    expect(gpio.writes).toEqual([]);
  });
});

describe("i2c", () => {
  it("detects buses, scans 0x03–0x77, reads and writes registers (hex)", async () => {
    const { harness, i2c } = pi();
    i2c.addDevice(1, 0x48, { 0: 0x19, 1: 0x80 });
    const eeprom = i2c.addDevice(1, 0x50);
    i2c.addDevice(1, 0x02); // reserved: never reported by a scan
    expect(await harness.call("i2c", { action: "detect" })).toEqual({
      buses: [{ bus: 1, device: "/dev/i2c-1" }],
    });
    expect(await harness.call("i2c", { action: "scan" })).toEqual({ bus: 1, addresses: ["0x48", "0x50"] });
    expect(await harness.call("i2c", { action: "read", address: "0x48", register: 0, length: 2 })).toEqual({
      bus: 1,
      address: "0x48",
      register: "0x00",
      data: "19 80",
    });
    expect(
      await harness.call("i2c", { action: "write", address: 0x50, register: "0x10", value: "de ad" }),
    ).toEqual({
      bus: 1,
      address: "0x50",
      written: 2,
    });
    expect([eeprom[0x10], eeprom[0x11]]).toEqual([0xde, 0xad]);
  });

  it("refuses bad addresses, lengths and hex; a silent address is a device error", async () => {
    const { harness } = pi();
    expect(codeOf(await harness.call("i2c", { action: "read", address: "0x78" }))).toBe(
      "i2c.invalid_address",
    );
    expect(codeOf(await harness.call("i2c", { action: "read", address: 2 }))).toBe("i2c.invalid_address");
    expect(codeOf(await harness.call("i2c", { action: "read", address: "banana" }))).toBe(
      "hardware.invalid_number",
    );
    expect(codeOf(await harness.call("i2c", { action: "read", address: "0x48", length: 33 }))).toBe(
      "i2c.invalid_length",
    );
    expect(codeOf(await harness.call("i2c", { action: "write", address: "0x48", value: "zz" }))).toBe(
      "hardware.invalid_hex",
    );
    expect(codeOf(await harness.call("i2c", { action: "scan", bus: 7 }))).toBe("i2c.failed");
  });

  it("writes ask as risk:high; reads and scans don't", async () => {
    const { harness, i2c } = pi({ require: ["risk:high"] });
    i2c.addDevice(1, 0x48);
    await harness.call("i2c", { action: "scan" });
    await harness.call("i2c", { action: "read", address: "0x48" });
    await harness.call("i2c", { action: "write", address: "0x48", value: 5 });
    expect(harness.approvalRequests.map((request) => request.action)).toEqual(["i2c write bus 1 0x48: 05"]);
  });
});

describe("spi", () => {
  it("lists devices and echoes a transfer (hex in, hex out) with the settings", async () => {
    const { harness, spi } = pi();
    expect(await harness.call("spi", { action: "list" })).toEqual({
      devices: ["/dev/spidev0.0", "/dev/spidev0.1"],
    });
    expect(
      await harness.call("spi", { action: "transfer", data: "9f 00 0x01", mode: 3, speed_hz: 500_000 }),
    ).toEqual({
      device: "/dev/spidev0.0",
      sent: "9f 00 01",
      received: "9f 00 01",
    });
    expect(spi.transfers[0]?.settings).toEqual({ mode: 3, speedHz: 500_000, bitsPerWord: 8 });
    expect(await harness.call("spi", { action: "read", device: "/dev/spidev0.1", length: 3 })).toMatchObject({
      received: "00 00 00",
    });
  });

  it("refuses unknown devices, bad hex and lengths", async () => {
    const { harness } = pi();
    expect(
      codeOf(await harness.call("spi", { action: "transfer", device: "/dev/spidev9.9", data: "00" })),
    ).toBe("spi.device_not_found");
    expect(codeOf(await harness.call("spi", { action: "transfer", data: "abc" }))).toBe(
      "hardware.invalid_hex",
    );
    expect(codeOf(await harness.call("spi", { action: "read", length: 257 }))).toBe("spi.invalid_length");
  });
});

describe("hardware_memory and board info", () => {
  it("reads through probe-rs when installed, with the chip and probe; validates address and length", async () => {
    const calls: string[][] = [];
    harness = hardwareHarness(
      { boards: [{ name: "nucleo", type: "nucleo-f411re", port: "/dev/ttyACM0", probe: "0483:374b" }] },
      {
        probeRs: "/usr/bin/probe-rs",
        probeRun: async (_file, args) => {
          calls.push(args);
          return "de ad be ef\n";
        },
      },
    );
    expect(
      await harness.call("hardware_memory", { action: "read", address: "0x20000000", length: 4 }),
    ).toEqual({
      board: "nucleo",
      address: "0x20000000",
      data: "de ad be ef",
      via: "probe-rs",
    });
    expect(calls[0]).toEqual([
      "read",
      "--chip",
      "STM32F411RETx",
      "--probe",
      "0483:374b",
      "b8",
      "0x20000000",
      "4",
    ]);
    expect(
      codeOf(await harness.call("hardware_memory", { action: "read", address: "0x20000000", length: 257 })),
    ).toBe("memory.invalid_length");
    expect(codeOf(await harness.call("hardware_memory", { action: "read", address: "0x1ffffffff" }))).toBe(
      "memory.invalid_address",
    );
  });

  it("board info: static facts plus what is configured", async () => {
    const { harness } = pi();
    const info = await harness.call("hardware_board_info", {});
    const board = (info.boards as Array<Record<string, unknown>>)[0];
    expect(board).toMatchObject({ name: "pi", type: "rpi-gpio", configured: { i2cBus: 1 } });
    expect(info.host).toHaveProperty("platform");
  });
});

describe("schemas for the model", () => {
  it("every hardware tool's input schema converts to JSON Schema", async () => {
    const { zodToJsonSchema } = await import("../../src/tools/json-schema.js");
    const { builtinTools } = await import("../../src/tools/index.js");
    const names = ["hardware_board_info", "gpio", "serial", "i2c", "spi", "hardware_memory"];
    for (const tool of builtinTools.filter((candidate) => names.includes(candidate.name))) {
      const schema = zodToJsonSchema(tool.inputSchema);
      expect(schema, tool.name).toMatchObject({ type: "object" });
    }
  });
});
