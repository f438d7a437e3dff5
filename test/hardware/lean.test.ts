import { createRequire } from "node:module";
import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

/** Native hardware modules are loaded on first use only: start-up with or without boards loads none. */

const NATIVE = /node_modules[\\/](serialport|@serialport[\\/]bindings-cpp|onoff|i2c-bus|spi-device)[\\/]/;
const loadedNative = () =>
  Object.keys(createRequire(import.meta.url).cache).filter((file) => NATIVE.test(file));

const HARDWARE_TOOLS = ["hardware_board_info", "gpio", "serial", "i2c", "spi", "hardware_memory"];

let app: TestApp | null = null;
afterEach(async () => {
  await app?.stop();
  app = null;
});

describe("native modules stay unloaded at start-up", () => {
  it("no hardware configured: nothing loaded, no hardware service, no hardware tools", async () => {
    app = await startTestApp({ features, llm: false });
    expect(loadedNative()).toEqual([]);
    expect(app.app.tools.enabledNames().filter((name) => HARDWARE_TOOLS.includes(name))).toEqual([]);
  });

  it("a Pi and a Nucleo configured: tools offered, still nothing native loaded until a tool runs", async () => {
    app = await startTestApp({
      features,
      llm: false,
      config: {
        hardware: {
          boards: [
            { name: "pi", type: "rpi-gpio" },
            { name: "nucleo", type: "nucleo-f401re", port: "/dev/ttyACM9" },
          ],
        },
      },
    });
    expect(
      app.app.tools
        .enabledNames()
        .filter((name) => HARDWARE_TOOLS.includes(name))
        .sort(),
    ).toEqual(["gpio", "hardware_board_info", "hardware_memory", "i2c", "serial", "spi"]);
    expect(loadedNative()).toEqual([]);
  });
});
