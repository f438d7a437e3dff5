import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import mqtt from "mqtt";
import { afterEach, describe, expect, it } from "vitest";
import { createHardwareFeature } from "../../src/app/hardware-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { triggersFeature } from "../../src/app/triggers-feature.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { ToolError } from "../../src/core/tool-error.js";
import { MemoryGpio } from "../../src/hardware/gpio-memory.js";
import type { JobCreator } from "../../src/scheduler/job.js";
import { Store } from "../../src/store/index.js";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms, hasWorkingSandbox } from "../helpers/requires.js";
import { hasMosquittoWithUsers, type Mosquitto, startMosquitto } from "./mosquitto.js";

/**
 * DESIGN.md → Security → "One guard per resource, whichever path reaches it": a serial device, a GPIO pin, an MQTT
 * broker (and its credentials) and the shell are reached from a trigger, a job, a hardware watch or an event turn
 * only through the same check as the tool for them. Each test goes around through every source that can reach its
 * resource: trigger_add called by the model, a config trigger, a chat trigger already stored (as made before the
 * guard), a cron job's turn, a prompt trigger's turn, hardware.watch — and the resource's own opener.
 */

const SECRET = "d".repeat(32);
const CHAT = { channel: "test", chatId: "chat-1" };
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An owner's turn with these tools made it (what trigger_add and cron_add record). */
const creator = (toolNames: string[]): JobCreator => ({
  identity: { channel: "test", userId: "user-1", role: "owner" },
  toolNames,
});

async function start(options: {
  config: ConfigInput;
  gpio?: MemoryGpio;
  dataDir?: string;
}): Promise<TestApp> {
  const gpio = options.gpio;
  const testApp = await startTestApp({
    features: [schedulerFeature, createHardwareFeature(gpio ? { gpio: () => gpio } : {}), triggersFeature],
    config: options.config,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  cleanups.push(() => testApp.stop());
  return testApp;
}

/** A data directory whose kv already holds chat triggers (made, say, by a release without these guards). */
function dataDirWithChatTriggers(rows: unknown[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-side-doors-"));
  const store = Store.open(dir);
  store.kv.set("triggers.chat", rows);
  store.close();
  return dir;
}

/** A stored chat trigger row. */
function chatRow(
  name: string,
  on: unknown,
  toolNames: string[],
  action: unknown = { message: "relay {{event.line}}{{event.topic}}{{event.pin}}" },
) {
  return {
    name,
    on,
    do: action,
    deliver: { chat: CHAT, pushover: false },
    cooldownSecs: 0,
    maxPerHour: 60,
    enabled: true,
    source: "chat",
    creator: creator(toolNames),
    createdFrom: CHAT,
  };
}

/** The results of the tool calls the model made last in this request's conversation. */
function lastToolResults(body: ChatRequestBody | undefined): Array<Record<string, unknown>> {
  const messages = body?.messages ?? [];
  const calls = messages.findLastIndex((message) => message.role === "assistant" && message.tool_calls);
  return messages
    .slice(calls + 1)
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as Record<string, unknown>);
}

/** An owner's chat turn in which the model calls `calls`; resolves with their results. */
async function modelCalls(
  testApp: TestApp,
  text: string,
  calls: Array<{ name: string; arguments: unknown }>,
): Promise<Array<Record<string, unknown>>> {
  let results: Array<Record<string, unknown>> = [];
  testApp.llm!.script(
    reply.toolCalls(calls),
    reply.text(`done: ${text}`, (body) => {
      results = lastToolResults(body);
    }),
  );
  await testApp.channel!.receive(text);
  await waitFor(() => testApp.channel!.texts().includes(`done: ${text}`), `the answer to "${text}"`);
  return results;
}

/**
 * An event turn (a prompt trigger fired by a webhook, and a cron prompt job run now), each made by an owner whose
 * turn had `tools`, in which the model calls `calls`; resolves with the results of both runs.
 */
async function eventTurnsCall(
  testApp: TestApp,
  tools: string[],
  calls: Array<{ name: string; arguments: unknown }>,
): Promise<{ trigger: Array<Record<string, unknown>>; job: Array<Record<string, unknown>> }> {
  const seen: Array<Array<Record<string, unknown>>> = [];
  const tag = `event-${Math.random().toString(16).slice(2)}`;
  const script = (label: string) => [
    reply.toolCalls(calls),
    reply.text(`${tag} ${label}`, (body) => {
      seen.push(lastToolResults(body));
    }),
  ];
  const triggers = testApp.app.context.services.triggers!;
  await triggers.add(
    {
      name: `${tag}-trigger`,
      on: { webhook: { secret: SECRET } },
      // The payload makes the turn untrusted; the trigger allows its tools after it, so the device guard is what
      // is attacked here (the rule of two has its own tests: test/security/untrusted-*.test.ts).
      do: { prompt: "Handle this event.", toolSet: tools, allowAfterUntrusted: tools },
      cooldownSecs: 0,
      maxPerHour: 60,
      enabled: true,
    },
    { creator: creator(tools), createdFrom: CHAT },
  );
  testApp.llm!.script(...script("trigger"));
  expect((await hook(testApp, `${tag}-trigger`, { any: "event" })).status).toBe(202);
  await waitFor(() => testApp.channel!.texts().includes(`${tag} trigger`), "the prompt trigger's answer");
  const scheduler = testApp.app.context.services.scheduler!;
  const job = scheduler.add(
    { name: `${tag}-job`, delay: "1h", prompt: "Check the devices.", toolSet: tools },
    { creator: creator(tools), createdFrom: CHAT, source: "chat" },
  );
  testApp.llm!.script(...script("job"));
  await scheduler.runNow(job.id);
  await waitFor(() => seen.length === 2, "the job's turn");
  return { trigger: seen[0]!, job: seen[1]! };
}

async function hook(testApp: TestApp, name: string, body: Record<string, unknown>) {
  // Each request its own body: the same body signed in the same second is a replay.
  const text = JSON.stringify({ ...body, nonce: Math.random() });
  const timestamp = Math.floor(Date.now() / 1000);
  return fetch(`${testApp.url}/hooks/${name}`, {
    method: "POST",
    headers: {
      "x-magpie-timestamp": String(timestamp),
      "x-magpie-signature": signWebhook(SECRET, timestamp, text),
    },
    body: text,
  });
}

const refusedWith = (code: string) => ({ ok: false, error: expect.objectContaining({ code }) });

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "none";
  } catch (error) {
    return error instanceof ToolError || (error as { code?: string }).code
      ? String((error as { code: string }).code)
      : `not coded: ${String(error)}`;
  }
}

/** A PTY pair from socat: Magpie's end (a device path) and the device's end, where a test writes lines. */
async function ptyPair(label: string): Promise<{ path: string; send(line: string): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), `magpie-${label}-`));
  const magpieEnd = path.join(dir, "tty");
  const deviceEnd = path.join(dir, "device");
  const socat: ChildProcess = spawn(
    "socat",
    [`pty,raw,echo=0,link=${magpieEnd}`, `pty,raw,echo=0,link=${deviceEnd}`],
    { stdio: "ignore" },
  );
  cleanups.push(async () => {
    const exited = new Promise((resolve) => socat.once("exit", resolve));
    socat.kill();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor(() => existsSync(magpieEnd) && existsSync(deviceEnd), "the PTY pair");
  const device = await open(deviceEnd, "w");
  cleanups.push(() => device.close());
  return { path: magpieEnd, send: async (line) => void (await device.write(`${line}\n`)) };
}

describe.runIf(hasPrograms("socat"))("serial: only configured boards' ports, whoever asks", () => {
  /** The configured board and another serial device on the box (a modem, another project's board). */
  async function devices() {
    const board = await ptyPair("board");
    const other = await ptyPair("modem");
    const hardware = { boards: [{ name: "sensors", type: "esp32" as const, port: board.path }] };
    return { board, other, hardware };
  }

  it("attack: the serial manager, trigger_add by the model, a prompt trigger's turn and a cron job's turn can't open another device", async () => {
    const { board, other, hardware } = await devices();
    const testApp = await start({
      config: {
        hardware,
        // The canary: the owner's own trigger on the board relays its lines.
        triggers: {
          sensors: {
            on: { serial: { port: "sensors", match: "^BOARD" } },
            do: { message: "{{event.line}}" },
            deliver: { channel: "test", chat_id: "chat-1" },
          },
        },
      },
    });
    const serial = testApp.app.context.services.hardware!.serial;
    const linkDir = mkdtempSync(path.join(tmpdir(), "magpie-links-"));
    cleanups.push(() => rmSync(linkDir, { recursive: true, force: true }));
    const otherLink = path.join(linkDir, "ttyUSB0");
    symlinkSync(other.path, otherLink);
    // The opener itself: whoever asks, another device — by its path or a symlink to it — is not opened.
    const owner = { baud: 9600, lineEnding: "lf" as const, owner: "test:chat-1" };
    expect(await codeOf(serial.open(other.path, owner))).toBe("serial.port_not_configured");
    expect(await codeOf(serial.open(otherLink, owner))).toBe("serial.port_not_configured");
    expect(await codeOf(serial.request(other.path, 9600, { cmd: "ping" }, 200))).toBe(
      "serial.port_not_configured",
    );
    expect(await codeOf(serial.listen(otherLink, undefined, { line: () => {} }))).toBe(
      "serial.port_not_configured",
    );
    // trigger_add, called by the model in an owner's turn that has the serial tool.
    const made = await modelCalls(testApp, "relay the modem", [
      {
        name: "trigger_add",
        arguments: {
          name: "modem",
          on: { serial: { port: other.path, match: "." } },
          do: { message: "{{event.line}}" },
        },
      },
      {
        name: "trigger_add",
        arguments: {
          name: "modem2",
          on: { serial: { port: otherLink, match: "." } },
          do: { message: "{{event.line}}" },
        },
      },
    ]);
    expect(made).toEqual([refusedWith("trigger.invalid"), refusedWith("trigger.invalid")]);
    expect(JSON.stringify(made[0])).toMatch(/not a configured board's port/);
    // The same from a turn without the serial tool, on the board itself: that turn can't read the board either.
    expect(
      await codeOf(
        testApp.app.context.services.triggers!.add(
          {
            name: "board",
            on: { serial: { port: "sensors", match: "." } },
            do: { message: "x" },
            cooldownSecs: 0,
            maxPerHour: 60,
            enabled: true,
          },
          { creator: creator(["trigger_add"]), createdFrom: CHAT },
        ),
      ),
    ).toBe("trigger.tool_not_allowed");
    // An event turn (prompt trigger) and a job's turn, each asking for a trigger on the other device and the serial tool on it.
    const calls = [
      {
        name: "trigger_add",
        arguments: {
          name: "late",
          on: { serial: { port: other.path, match: "." } },
          do: { message: "{{event.line}}" },
        },
      },
      { name: "serial", arguments: { action: "open", port: other.path } },
    ];
    const turns = await eventTurnsCall(testApp, ["trigger_add", "serial"], calls);
    for (const results of [turns.trigger, turns.job])
      expect(results).toEqual([refusedWith("trigger.invalid"), refusedWith("serial.port_not_configured")]);
    // Nothing listens on the other device: its line never reaches a chat, the board's does.
    await other.send("AT+SECRET modem line");
    await board.send("BOARD ok");
    await waitFor(() => testApp.channel!.texts().includes("BOARD ok"), "the board's line");
    expect(testApp.channel!.texts().join("\n")).not.toContain("modem line");
    expect(testApp.app.context.services.triggers!.list().map((view) => view.name)).toEqual(
      expect.not.arrayContaining(["modem", "modem2", "late", "board"]),
    );
    expect(serial.openPorts().map((port) => port.path)).toEqual([board.path]);
  });

  it("attack: a stored chat trigger on another device is not started; a config trigger on one stops start-up", async () => {
    const { board, other, hardware } = await devices();
    const dataDir = dataDirWithChatTriggers([
      chatRow("modem", { serial: { port: other.path, match: "." } }, ["trigger_add", "serial"]),
      chatRow("canary", { serial: { port: board.path, match: "^BOARD" } }, ["trigger_add", "serial"]),
    ]);
    const testApp = await start({ config: { hardware }, dataDir });
    await other.send("AT+SECRET modem line");
    await board.send("BOARD ok");
    await waitFor(() => testApp.channel!.texts().includes("relay BOARD ok"), "the canary's line");
    expect(testApp.channel!.texts().join("\n")).not.toContain("modem line");
    await expect(
      startTestApp({
        llm: false,
        features: [createHardwareFeature(), triggersFeature],
        config: {
          hardware,
          triggers: {
            modem: {
              on: { serial: { port: other.path, match: "." } },
              do: { message: "{{event.line}}" },
              deliver: { channel: "test", chat_id: "chat-1" },
            },
          },
        },
      }),
    ).rejects.toThrow(/triggers\.modem\.on\.serial\.port: ".*" is not a configured board's port/);
  });
});

describe("GPIO: only declared pins, only for a creator with the gpio tool", () => {
  const hardware = {
    boards: [{ name: "pi", type: "rpi-gpio" as const }],
    pins: {
      door: { line: 17, direction: "in" as const, edge: "both" as const },
      lamp: { line: 18, direction: "out" as const },
    },
  };

  it("attack: the pin service, trigger_add by the model, a turn without gpio, event and job turns can't reach an undeclared pin", async () => {
    const gpio = new MemoryGpio();
    const testApp = await start({
      gpio,
      config: {
        hardware,
        triggers: {
          canary: {
            on: { gpio: { pin: "door" } },
            do: { message: "canary {{event.pin}} {{event.value}}" },
            deliver: { channel: "test", chat_id: "chat-1" },
          },
        },
      },
    });
    const pins = testApp.app.context.services.hardware!.gpio;
    // The opener itself: a pin is a name from hardware.pins, never a line number.
    expect(await codeOf(pins.watch("4"))).toBe("gpio.unknown_pin");
    expect(await codeOf(pins.read("4"))).toBe("gpio.unknown_pin");
    expect(await codeOf(pins.write("door", 1))).toBe("gpio.not_output");
    const made = await modelCalls(testApp, "watch pin 4", [
      {
        name: "trigger_add",
        arguments: { name: "bcm4", on: { gpio: { pin: "4" } }, do: { message: "{{event.value}}" } },
      },
      {
        name: "trigger_add",
        arguments: { name: "lamp", on: { gpio: { pin: "lamp" } }, do: { message: "{{event.value}}" } },
      },
    ]);
    expect(made).toEqual([refusedWith("trigger.invalid"), refusedWith("trigger.invalid")]);
    // A turn without the gpio tool can't watch a declared pin through a trigger either.
    expect(
      await codeOf(
        testApp.app.context.services.triggers!.add(
          {
            name: "door-spy",
            on: { gpio: { pin: "door" } },
            do: { message: "x" },
            cooldownSecs: 0,
            maxPerHour: 60,
            enabled: true,
          },
          { creator: creator(["trigger_add"]), createdFrom: CHAT },
        ),
      ),
    ).toBe("trigger.tool_not_allowed");
    // Event and job turns whose creator had no gpio tool get none, whatever toolSet they ask for.
    const turns = await eventTurnsCall(
      testApp,
      ["trigger_add"],
      [
        { name: "gpio", arguments: { action: "write", pin: "lamp", value: 1 } },
        {
          name: "trigger_add",
          arguments: { name: "door2", on: { gpio: { pin: "door" } }, do: { message: "x" } },
        },
      ],
    );
    for (const results of [turns.trigger, turns.job]) {
      expect(results[0]).toMatchObject({ ok: false });
      expect(results[1]).toEqual(refusedWith("trigger.tool_not_allowed"));
    }
    expect(gpio.writes).toEqual([]);
    expect([...gpio.directions.keys()]).toEqual([17]);
    gpio.drive(17, 1);
    await waitFor(() => testApp.channel!.texts().includes("canary door 1"), "the canary");
    expect(testApp.channel!.texts().filter((text) => text === "x")).toEqual([]);
  });

  it("attack: stored chat triggers on an undeclared pin or by a creator without gpio are not started; config and hardware.watch can't name an undeclared pin", async () => {
    const gpio = new MemoryGpio();
    const dataDir = dataDirWithChatTriggers([
      chatRow("bcm4", { gpio: { pin: "4" } }, ["trigger_add", "gpio"]),
      chatRow("no-gpio", { gpio: { pin: "door" } }, ["trigger_add"], { message: "spy {{event.value}}" }),
      chatRow("canary", { gpio: { pin: "door" } }, ["trigger_add", "gpio"], {
        message: "canary {{event.value}}",
      }),
    ]);
    const testApp = await start({ gpio, config: { hardware }, dataDir });
    await waitFor(() => gpio.directions.has(17), "the canary's pin");
    gpio.drive(17, 1);
    await waitFor(() => testApp.channel!.texts().includes("canary 1"), "the canary");
    expect(testApp.channel!.texts().join("\n")).not.toContain("spy");
    expect([...gpio.directions.keys()]).toEqual([17]);
    const withConfig = (config: ConfigInput) =>
      startTestApp({
        llm: false,
        features: [createHardwareFeature({ gpio: () => new MemoryGpio() }), triggersFeature],
        config,
      });
    await expect(
      withConfig({
        hardware,
        triggers: {
          bcm4: {
            on: { gpio: { pin: "4" } },
            do: { message: "x" },
            deliver: { channel: "test", chat_id: "chat-1" },
          },
        },
      }),
    ).rejects.toThrow(/triggers\.bcm4\.on\.gpio\.pin: unknown pin "4"/);
    await expect(
      withConfig({
        hardware: { ...hardware, watch: [{ pin: "4", notify: { channel: "test", chat_id: "chat-1" } }] },
      }),
    ).rejects.toThrow(/hardware\.watch\[0\]: unknown pin "4"/);
  });
});

describe.runIf(hasMosquittoWithUsers())(
  "MQTT: the configured broker only; its credentials go nowhere else",
  () => {
    const USER = "magpie";
    const PASSWORD = "home-broker-password";
    let home: Mosquitto;
    let attacker: Mosquitto;

    /** The owner's broker, and one the attacker runs — which would take the owner's credentials if they came. */
    async function brokers() {
      home = await startMosquitto({ users: { [USER]: PASSWORD } });
      attacker = await startMosquitto({ users: { [USER]: PASSWORD }, log: true });
      cleanups.push(
        () => home.stop(),
        () => attacker.stop(),
      );
      return { mqtt: { url: home.url, username: USER, password: PASSWORD } };
    }

    it("attack: trigger_add by the model, a turn without mqtt_publish, event and job turns, the hub itself: no other broker, no `#`", async () => {
      const { mqtt: settings } = await brokers();
      const testApp = await start({ config: { mqtt: settings } });
      const made = await modelCalls(testApp, "watch everything", [
        {
          name: "trigger_add",
          arguments: {
            name: "spy",
            on: { mqtt: { topic: "#", url: attacker.url } },
            do: { message: "{{event.topic}}" },
          },
        },
        {
          name: "trigger_add",
          arguments: {
            name: "spy2",
            on: { mqtt: { topic: "home/door", url: attacker.url } },
            do: { message: "{{event.topic}}" },
          },
        },
        {
          name: "trigger_add",
          arguments: { name: "all", on: { mqtt: { topic: "#" } }, do: { message: "{{event.topic}}" } },
        },
        {
          name: "trigger_add",
          arguments: { name: "sys", on: { mqtt: { topic: "$SYS/#" } }, do: { message: "{{event.topic}}" } },
        },
        {
          name: "trigger_add",
          arguments: {
            name: "door",
            on: { mqtt: { topic: "home/door", url: `${home.url}/` } },
            do: { message: "door {{event.payload}}" },
          },
        },
      ]);
      expect(made.slice(0, 4)).toEqual(Array(4).fill(refusedWith("trigger.invalid")));
      expect(JSON.stringify(made[0])).toMatch(/configured broker \(mqtt\.url\) only/);
      expect(JSON.stringify(made[2])).toMatch(/every topic on the broker/);
      // The configured broker, however spelled, is fine.
      expect(made[4]).toMatchObject({ trigger: { name: "door" } });
      expect(
        await codeOf(
          testApp.app.context.services.triggers!.add(
            {
              name: "nosy",
              on: { mqtt: { topic: "home/door" } },
              do: { message: "x" },
              cooldownSecs: 0,
              maxPerHour: 60,
              enabled: true,
            },
            { creator: creator(["trigger_add"]), createdFrom: CHAT },
          ),
        ),
      ).toBe("trigger.tool_not_allowed");
      const turns = await eventTurnsCall(
        testApp,
        ["trigger_add", "mqtt_publish"],
        [
          {
            name: "trigger_add",
            arguments: {
              name: "late",
              on: { mqtt: { topic: "#", url: attacker.url } },
              do: { message: "x" },
            },
          },
        ],
      );
      for (const results of [turns.trigger, turns.job])
        expect(results).toEqual([refusedWith("trigger.invalid")]);
      // The hub itself refuses a broker nobody configured, whoever asks.
      const runtime = testApp.app.context.services.triggers!.loaded()!;
      runtime.mqtt.subscribe({ url: attacker.url, ownerNamed: false, filter: "#", key: "direct" }, () => {});
      runtime.mqtt.subscribe({ url: attacker.url, ownerNamed: true, filter: "#", key: "direct" }, () => {});
      await runtime.mqtt.settled();
      // The chat trigger on the configured broker works (the canary), and the attacker's broker saw nobody.
      const client = await mqtt.connectAsync(home.url, { username: USER, password: PASSWORD });
      cleanups.push(() => client.endAsync());
      await waitFor(async () => {
        await client.publishAsync("home/door", "open", { qos: 1 });
        return testApp.channel!.texts().includes("door open");
      }, "the canary");
      // Not even an attempt (the broker logs a client's CONNECT as "New client connected" or "not authorised").
      expect(attacker.log()).not.toMatch(/New client connected|not authorised|SUBSCRIBE/);
    });

    it("attack: a stored chat trigger naming another broker is not started; a config trigger naming one gets no credentials", async () => {
      const { mqtt: settings } = await brokers();
      const dataDir = dataDirWithChatTriggers([
        chatRow("spy", { mqtt: { topic: "#", url: attacker.url } }, ["trigger_add", "mqtt_publish"]),
        chatRow("canary", { mqtt: { topic: "home/door" } }, ["trigger_add", "mqtt_publish"], {
          message: "canary {{event.payload}}",
        }),
      ]);
      const testApp = await start({
        config: {
          mqtt: settings,
          // The owner's own file may name another broker: it is reached, but never with mqtt.username/password.
          triggers: {
            elsewhere: {
              on: { mqtt: { topic: "other/#", url: attacker.url } },
              do: { message: "x" },
              deliver: { channel: "test", chat_id: "chat-1" },
            },
          },
        },
        dataDir,
      });
      const client = await mqtt.connectAsync(home.url, { username: USER, password: PASSWORD });
      cleanups.push(() => client.endAsync());
      await waitFor(async () => {
        await client.publishAsync("home/door", "open", { qos: 1 });
        return testApp.channel!.texts().includes("canary open");
      }, "the canary");
      // The owner's trigger tried the other broker anonymously (refused there): the log says so, with no user name.
      await waitFor(
        () => /New client connected|not authorised/.test(attacker.log()),
        "the config trigger's connection attempt",
      );
      expect(attacker.log()).not.toMatch(/u'magpie'|SUBSCRIBE/);
      expect(attacker.log()).toMatch(/not authorised/);
    });
  },
);

describe("shell: only with shell in the creator's tools", () => {
  it("attack: trigger_add and cron jobs from a turn without shell, a stored chat trigger, event and job turns never run a command", async () => {
    const sandbox = (await hasWorkingSandbox()) ? "bwrap" : "off";
    const dataDir = dataDirWithChatTriggers([
      chatRow("stored", { webhook: { secret: SECRET } }, ["trigger_add"], {
        command: "touch pwned-by-stored-trigger",
      }),
    ]);
    const testApp = await start({
      dataDir,
      config: {
        tools: { shell: { sandbox } },
        agents: { main: { toolSet: ["trigger_add", "cron_add", "cron_update"] } },
        // The owner's own command trigger runs (the canary): the shell works here.
        triggers: {
          canary: {
            on: { webhook: { secret: SECRET } },
            do: { command: "echo canary-ran" },
            deliver: { channel: "test", chat_id: "chat-1" },
          },
        },
      },
    });
    const scheduler = testApp.app.context.services.scheduler!;
    const ownersJob = scheduler.add({ name: "backup", expression: "0 3 * * *", command: "echo backup" });
    const made = await modelCalls(testApp, "run things", [
      {
        name: "trigger_add",
        arguments: {
          name: "cmd",
          on: { webhook: { secret: SECRET } },
          do: { command: "touch pwned-by-trigger" },
        },
      },
      { name: "cron_add", arguments: { delay: "1s", command: "touch pwned-by-cron" } },
      { name: "cron_update", arguments: { job_id: ownersJob.id, command: "touch pwned-by-update" } },
      {
        name: "trigger_add",
        arguments: {
          name: "ask",
          on: { webhook: { secret: SECRET } },
          do: { prompt: "Run it.", toolSet: ["shell"] },
        },
      },
    ]);
    expect(made.slice(0, 3)).toEqual([
      refusedWith("trigger.tool_not_allowed"),
      refusedWith("cron.tool_not_allowed"),
      refusedWith("cron.tool_not_allowed"),
    ]);
    expect(made[3]).toMatchObject({ trigger: { name: "ask" } });
    // The prompt trigger's turn gets no shell tool, whatever its toolSet says; so does a job's turn.
    let offered: string[] = [];
    testApp.llm!.script(
      reply.text("no shell here", (body) => {
        offered = (body.tools ?? []).map((tool) => tool.function.name);
      }),
    );
    expect((await hook(testApp, "ask", {})).status).toBe(202);
    await waitFor(() => testApp.channel!.texts().includes("no shell here"), "the prompt trigger's answer");
    expect(offered).not.toContain("shell");
    const turns = await eventTurnsCall(
      testApp,
      ["trigger_add"],
      [{ name: "shell", arguments: { command: "touch pwned-by-event-turn" } }],
    );
    for (const results of [turns.trigger, turns.job]) expect(results[0]).toMatchObject({ ok: false });
    // Not started at all (its creator had no shell): the hook is unknown.
    expect((await hook(testApp, "stored", {})).status).toBe(404);
    expect((await hook(testApp, "canary", {})).status).toBe(202);
    await waitFor(() => testApp.channel!.texts().some((text) => text.includes("canary-ran")), "the canary");
    await testApp.app.context.services.triggers!.loaded()!.engine.idle();
    for (const file of ["stored-trigger", "trigger", "cron", "update", "event-turn"])
      expect(existsSync(path.join(testApp.config.workspace, `pwned-by-${file}`))).toBe(false);
    expect(scheduler.get(ownersJob.id)).toMatchObject({ command: "echo backup" });
  });
});
