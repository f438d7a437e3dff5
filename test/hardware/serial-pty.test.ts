import { afterEach, describe, expect, it } from "vitest";
import { ToolError } from "../../src/core/tool-error.js";
import { nodeSerialBackend } from "../../src/hardware/serial-backend.js";
import { SerialManager } from "../../src/hardware/serial-manager.js";
import { hasPrograms } from "../helpers/requires.js";
import { type PtyDevice, startPtyDevice } from "./pty-device.js";

/** SerialManager over a real PTY pair (socat) with the JSON-lines device simulator on the other end. */

let device: PtyDevice | null = null;
let manager: SerialManager | null = null;
afterEach(async () => {
  await manager?.closeAll();
  await device?.stop();
  device = null;
  manager = null;
});

async function setup() {
  device = await startPtyDevice();
  manager = new SerialManager({
    backend: nodeSerialBackend,
    boards: [{ name: "sim", port: device.port }],
  });
  return { device, manager };
}

/** Opens the port for `owner` and consumes the simulator's boot line (a real sketch prints one too). */
async function openBooted(manager: SerialManager, port: string, owner: string) {
  await manager.open(port, { baud: 115200, lineEnding: "lf", owner });
  // The simulator is a child process just started: on a loaded CI box its first line can take seconds.
  expect(await manager.read(port, owner, 8000)).toBe("# magpie-sim booted");
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "none";
  } catch (error) {
    return error instanceof ToolError ? error.code : `not a ToolError: ${String(error)}`;
  }
}

describe.runIf(hasPrograms("socat"))("serial over a real PTY", () => {
  it("open, query a JSON line, read the sketch's chatter, close", async () => {
    const { device, manager } = await setup();
    await openBooted(manager, device.port, "s1");
    expect(await manager.query(device.port, "s1", '{"cmd":"ping"}', 2000)).toBe(
      '{"ok":true,"board":"sim","version":1}',
    );
    await manager.write(device.port, "s1", "hello");
    expect(await manager.read(device.port, "s1", 2000)).toBe("echo: hello");
    await manager.close(device.port, "s1");
    expect(manager.openPorts()).toEqual([]);
  });

  it("board requests skip non-JSON chatter and turn ok:false into board.error", async () => {
    const { device, manager } = await setup();
    expect(await manager.request(device.port, 115200, { cmd: "temp" }, 2000)).toEqual({
      ok: true,
      celsius: 21.5,
    });
    expect(await manager.request(device.port, 115200, { cmd: "nope" }, 2000)).toEqual({
      ok: false,
      error: "unknown cmd nope",
    });
  });

  it("a read with nothing coming times out with serial.timeout", async () => {
    const { device, manager } = await setup();
    await openBooted(manager, device.port, "s1");
    const started = Date.now();
    expect(await codeOf(manager.query(device.port, "s1", '{"cmd":"slow"}', 150))).toBe("serial.timeout");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("one owner per port: a second session is refused until the first closes", async () => {
    const { device, manager } = await setup();
    await manager.open(device.port, { baud: 115200, lineEnding: "lf", owner: "telegram:1" });
    expect(
      await codeOf(manager.open(device.port, { baud: 115200, lineEnding: "lf", owner: "telegram:2" })),
    ).toBe("serial.port_busy");
    expect(await codeOf(manager.write(device.port, "telegram:2", "x"))).toBe("serial.port_busy");
    await manager.close(device.port, "telegram:1");
    await manager.open(device.port, { baud: 115200, lineEnding: "lf", owner: "telegram:2" });
    expect(manager.openPorts()[0]?.owner).toBe("telegram:2");
  });

  it("a session that ends (/reset) gives up the ports it owned, and only those", async () => {
    const { device, manager } = await setup();
    await manager.open(device.port, { baud: 115200, lineEnding: "lf", owner: "telegram:1" });
    await manager.closeOwnedBy("telegram:2");
    expect(manager.openPorts()).toHaveLength(1);
    await manager.closeOwnedBy("telegram:1");
    expect(manager.openPorts()).toEqual([]);
    await manager.open(device.port, { baud: 115200, lineEnding: "lf", owner: "telegram:2" });
    expect(manager.openPorts()[0]?.owner).toBe("telegram:2");
  });

  it("a port that disappears fails the pending read with serial.port_closed and is forgotten", async () => {
    const { device, manager } = await setup();
    await openBooted(manager, device.port, "s1");
    const pending = codeOf(manager.read(device.port, "s1", 5000));
    await device.unplug();
    expect(await pending).toBe("serial.port_closed");
    expect(manager.openPorts()).toEqual([]);
    expect(await codeOf(manager.read(device.port, "s1", 100))).toBe("serial.not_open");
  });

  it("opening a port that does not exist says so", async () => {
    manager = new SerialManager({
      backend: nodeSerialBackend,
      boards: [{ name: "gone", port: "/tmp/no-such-tty-magpie" }],
    });
    expect(
      await codeOf(manager.open("/tmp/no-such-tty-magpie", { baud: 9600, lineEnding: "lf", owner: "s1" })),
    ).toBe("serial.port_not_found");
  });
});
