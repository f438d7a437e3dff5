import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createHardwareFeature } from "../../src/app/hardware-feature.js";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { MemoryGpio } from "../../src/hardware/gpio-memory.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms, hasWorkingSandbox } from "../helpers/requires.js";

/** GPIO edges, serial lines and cron checks as trigger sources; the command action. */

let app: TestApp | null = null;
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  await app?.stop();
  app = null;
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const sentTexts = (testApp: TestApp) => testApp.channel!.sent.map((sent) => sent.message.text ?? "");
const countsOf = (testApp: TestApp, name: string) =>
  testApp.app.context.services.triggers!.list().find((view) => view.name === name)!.counts;
const deliver = { channel: "test", chat_id: "owner-chat" };

describe("GPIO triggers", () => {
  it("attack: a bouncing door contact fires once per debounced edge, and the cooldown drops the rest", async () => {
    const gpio = new MemoryGpio();
    gpio.levels.set(17, 1);
    app = await startTestApp({
      llm: false,
      features: [createHardwareFeature({ gpio: () => gpio }), triggersFeature],
      config: {
        hardware: {
          boards: [{ name: "pi", type: "rpi-gpio" }],
          pins: { door: { line: 17, direction: "in", edge: "both", debounceMs: 30, activeLow: true } },
        },
        triggers: {
          door: {
            on: { gpio: { pin: "door", edge: "rising" } },
            when: "event.value == 1",
            do: { message: "Door opened ({{event.pin}} {{event.edge}})" },
            deliver,
            cooldownSecs: 60,
          },
        },
      },
    });
    const testApp = app;
    await waitFor(() => gpio.directions.get(17) === "in", "the watched line");
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Contact bounce: five raw changes within a few ms, settling at raw 0 = logical 1 (open).
    for (const level of [0, 1, 0, 1, 0] as const) gpio.drive(17, level);
    await waitFor(() => sentTexts(testApp).length === 1, "the message");
    expect(sentTexts(testApp)).toEqual(["Door opened (door rising)"]);
    // Closed and opened again, twice, within the cooldown: debounced edges, each dropped and counted.
    for (let round = 0; round < 2; round++) {
      gpio.drive(17, 1);
      await new Promise((resolve) => setTimeout(resolve, 60));
      gpio.drive(17, 0);
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    await waitFor(() => countsOf(testApp, "door").dropped === 2, "the dropped edges");
    expect(countsOf(testApp, "door")).toEqual({ fired: 1, filtered: 0, errors: 0, dropped: 2 });
    expect(sentTexts(testApp)).toHaveLength(1);
  });

  it("a pin that is not declared is a config error naming the key", async () => {
    await expect(
      startTestApp({
        llm: false,
        features: [createHardwareFeature({ gpio: () => new MemoryGpio() }), triggersFeature],
        config: {
          hardware: { boards: [{ name: "pi", type: "rpi-gpio" }] },
          triggers: { door: { on: { gpio: { pin: "nope" } }, do: { message: "x" }, deliver } },
        },
      }),
    ).rejects.toThrow(/triggers\.door\.on\.gpio\.pin: unknown pin "nope"/);
  });
});

describe.runIf(hasPrograms("socat"))("serial triggers (a real PTY)", () => {
  it("a line matching the pattern fires with its groups; other lines and an overlong line do nothing", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-serial-"));
    const magpieEnd = path.join(dir, "ttyMagpie");
    const boardEnd = path.join(dir, "ttyBoard");
    const socat: ChildProcess = spawn(
      "socat",
      [`pty,raw,echo=0,link=${magpieEnd}`, `pty,raw,echo=0,link=${boardEnd}`],
      {
        stdio: "ignore",
      },
    );
    cleanups.push(async () => {
      const exited = new Promise((resolve) => socat.once("exit", resolve));
      socat.kill();
      await exited;
      rmSync(dir, { recursive: true, force: true });
    });
    await waitFor(() => existsSync(magpieEnd) && existsSync(boardEnd), "the PTY pair");
    app = await startTestApp({
      llm: false,
      features: [createHardwareFeature(), triggersFeature],
      config: {
        hardware: { boards: [{ name: "sensors", type: "esp32", port: magpieEnd, baud: 9600 }] },
        triggers: {
          leak: {
            on: { serial: { port: magpieEnd, baud: 9600, match: "^LEAK sensor=(\\w+) level=(\\d+)" } },
            when: "int(event.payload.groups[1]) > 50",
            do: { message: "Water at {{event.payload.groups.0}}: {{event.line}}" },
            deliver,
          },
        },
      },
    });
    const testApp = app;
    // Written asynchronously: the PTY's buffer is small and Magpie reads the other end in this process.
    const board = await open(boardEnd, "w");
    cleanups.unshift(() => board.close());
    await board.write(
      `OK heartbeat\r\nLEAK sensor=big level=99 ${"A".repeat(200_000)}\nLEAK sensor=cellar level=12\n`,
    );
    await board.write("LEAK sensor=cellar level=80\r\n");
    await waitFor(() => sentTexts(testApp).length === 1, "the message");
    expect(sentTexts(testApp)).toEqual(["Water at cellar: LEAK sensor=cellar level=80"]);
    expect(countsOf(testApp, "leak")).toMatchObject({ fired: 1, filtered: 1 });
  });

  it("attack: a pattern that can't run in linear time is a config error", async () => {
    await expect(
      startTestApp({
        llm: false,
        features: [triggersFeature],
        config: {
          triggers: {
            echo: { on: { serial: { port: "/dev/null", match: "(a+)\\1" } }, do: { message: "x" }, deliver },
          },
        },
      }),
    ).rejects.toThrow(/triggers\.echo\.on\.serial\.match: .*linear time/);
  });
});

describe("cron triggers", () => {
  it("checks on its schedule and acts only when `when` holds", async () => {
    app = await startTestApp({
      llm: false,
      features: [triggersFeature],
      config: {
        triggers: {
          tick: { on: { cron: "* * * * * *" }, do: { message: "tick {{event.source}}" }, deliver },
          never: {
            on: { cron: "* * * * * *" },
            when: "event.payload.at == 'never'",
            do: { message: "no" },
            deliver,
          },
        },
      },
    });
    const testApp = app;
    await waitFor(
      () => countsOf(testApp, "never").filtered >= 1 && sentTexts(testApp).length >= 1,
      "a check",
      5_000,
    );
    expect(sentTexts(testApp)[0]).toBe("tick cron");
    expect(sentTexts(testApp)).not.toContain("no");
  });

  it("a bad `when` stops start-up with triggers.<name>.when named", async () => {
    await expect(
      startTestApp({
        llm: false,
        features: [triggersFeature],
        config: {
          triggers: {
            bad: { on: { cron: "0 * * * *" }, when: "event.payload.x >", do: { message: "x" }, deliver },
          },
        },
      }),
    ).rejects.toThrow(/triggers\.bad\.when: /);
  });
});

describe("command triggers", () => {
  it("runs the command through the sandboxed shell tool and delivers its output", async () => {
    const secret = "c".repeat(32);
    const config: ConfigInput = {
      tools: { shell: { sandbox: (await hasWorkingSandbox()) ? "bwrap" : "off" } },
      triggers: {
        disk: { on: { webhook: { secret } }, do: { command: "echo disk-ok" }, deliver },
      },
    };
    app = await startTestApp({ llm: false, features: [triggersFeature], config });
    const testApp = app;
    const timestamp = Math.floor(Date.now() / 1000);
    const response = await fetch(`${testApp.url}/hooks/disk`, {
      method: "POST",
      headers: {
        "x-magpie-timestamp": String(timestamp),
        "x-magpie-signature": signWebhook(secret, timestamp, "{}"),
      },
      body: "{}",
    });
    expect(response.status).toBe(202);
    await waitFor(() => sentTexts(testApp).length === 1, "the output", 10_000);
    expect(sentTexts(testApp)[0]).toBe("✅ disk\ndisk-ok");
  });
});
