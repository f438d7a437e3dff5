import { afterEach, describe, expect, it } from "vitest";
import { features } from "../../src/app/features.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startTestApp } from "../helpers/harness.js";
import { hasPrograms } from "../helpers/requires.js";
import { codeOf, hardwareHarness } from "./hardware-harness.js";
import { startPtyDevice } from "./pty-device.js";

/** The serial tool end to end: Telegram fake → scripted LLM → serial over a real PTY → the simulated board. */

const OWNER = { id: 777, first_name: "Alice" };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => undefined);
  cleanup = [];
});

describe.runIf(hasPrograms("socat"))("serial in a Telegram chat", () => {
  it("the model opens the board's port and queries it; the board's answer reaches the chat", async () => {
    const device = await startPtyDevice();
    cleanup.push(() => device.stop());
    const telegram = await new FakeTelegram().start();
    cleanup.push(() => telegram.close());
    const testApp = await startTestApp({
      features,
      loadChannels: true,
      channel: null,
      config: {
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER.id],
          },
        },
        hardware: { boards: [{ name: "uno", type: "arduino-uno", port: device.port }] },
      },
    });
    cleanup.push(() => testApp.stop());
    const llm = testApp.llm!;
    const toolResult = (body: { messages: Array<{ role: string; content?: string | null }> }) =>
      JSON.parse(
        body.messages.filter((message) => message.role === "tool").at(-1)?.content ?? "{}",
      ) as Record<string, unknown>;
    llm.script(
      reply.toolCalls([{ name: "serial", arguments: { action: "open", port: "uno" } }], (body) => {
        expect(body.tools?.map((tool) => tool.function.name)).toContain("serial");
      }),
      reply.toolCalls(
        [{ name: "serial", arguments: { action: "query", port: "uno", data: '{"cmd":"ping"}' } }],
        (body) => {
          expect(toolResult(body)).toMatchObject({
            path: device.port,
            owner: expect.stringContaining("777"),
          });
        },
      ),
      reply.toolCalls(
        [
          {
            name: "serial",
            arguments: { action: "query", port: "uno", data: '{"cmd":"slow"}', timeout_ms: 100 },
          },
        ],
        (body) => {
          expect(toolResult(body)).toEqual({
            port: device.port,
            line: '{"ok":true,"board":"sim","version":1}',
          });
        },
      ),
      reply.text("The board answered: ok, sim v1.", (body) => {
        expect(toolResult(body)).toMatchObject({ ok: false, error: { code: "serial.timeout" } });
      }),
    );
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "is the uno alive?" });
    const texts = () =>
      telegram
        .callsOf("sendMessage")
        .filter((call) => !call.failed && String(call.body.chat_id) === String(OWNER.id))
        .map((call) => String(call.body.text));
    await waitFor(() => texts().length > 0, "the reply");
    expect(texts()).toEqual(["The board answered: ok, sim v1."]);
    llm.assertDone();
    // Shutdown closes the port.
    await testApp.app.stop();
    expect(testApp.app.context.services.hardware?.serial.openPorts()).toEqual([]);
  });
});

describe.runIf(hasPrograms("socat"))("board protocol over the PTY", () => {
  it("gpio on a serial board goes through the sketch's JSON lines; memory too when there is no probe-rs", async () => {
    const device = await startPtyDevice();
    cleanup.push(() => device.stop());
    const harness = hardwareHarness(
      {
        boards: [{ name: "nucleo", type: "nucleo-f401re", port: device.port }],
        pins: { led: { line: 13, direction: "out" }, button: { line: 2, direction: "in" } },
      },
      { probeRs: null },
    );
    cleanup.push(() => harness.close());
    expect(await harness.call("gpio", { action: "write", pin: "led", value: 1 })).toEqual({
      pin: "led",
      value: 1,
      written: true,
    });
    expect(await harness.call("gpio", { action: "read", pin: "led" })).toEqual({ pin: "led", value: 1 });
    expect(codeOf(await harness.call("gpio", { action: "write", pin: "button", value: 1 }))).toBe(
      "gpio.not_output",
    );
    expect(
      await harness.call("hardware_memory", { action: "read", address: "0x20000010", length: 4 }),
    ).toEqual({
      board: "nucleo",
      address: "0x20000010",
      data: "10 11 12 13",
      via: "serial",
    });
    await harness.call("hardware_memory", { action: "write", address: "0x20000010", value: "ca fe" });
    expect(
      await harness.call("hardware_memory", { action: "read", address: "0x20000010", length: 2 }),
    ).toMatchObject({ data: "ca fe" });
    const refused = await harness.call("hardware_memory", {
      action: "read",
      address: "0x30000000",
      length: 4,
    });
    expect(codeOf(refused)).toBe("board.error");
    // Another session can't take the port the sketch's requests use while a session owns it.
    expect(await harness.call("serial", { action: "open", port: "nucleo" }, "telegram:1")).toMatchObject({
      alreadyOpen: true,
    });
    expect(codeOf(await harness.call("serial", { action: "open", port: "nucleo" }, "telegram:2"))).toBe(
      "serial.port_busy",
    );
  });

  it("a raw serial command that writes is risk:high like gpio write: it can't slip past the approval", async () => {
    const device = await startPtyDevice();
    cleanup.push(() => device.stop());
    const harness = hardwareHarness(
      { boards: [{ name: "uno", type: "arduino-uno", port: device.port }] },
      {},
      { require: ["risk:high"], decide: () => "denied" },
    );
    cleanup.push(() => harness.close());
    await harness.call("serial", { action: "open", port: "uno" });
    expect(
      await harness.call("serial", { action: "query", port: "uno", data: '{"cmd":"gpio_read","pin":2}' }),
    ).toMatchObject({
      line: expect.stringMatching(/^# magpie-sim booted$|"ok":true/),
    });
    expect(harness.approvalRequests).toHaveLength(0);
    const raw = await harness.call("serial", {
      action: "query",
      port: "uno",
      data: '{"cmd":"gpio_write","pin":13,"value":1}',
    });
    expect(codeOf(raw)).toBe("approval.denied");
    expect(codeOf(await harness.call("serial", { action: "write", port: "uno", data: "anything" }))).toBe(
      "approval.denied",
    );
    expect(harness.approvalRequests.map((request) => request.action)).toEqual([
      `serial query ${device.port}: {"cmd":"gpio_write","pin":13,"value":1}`,
      `serial write ${device.port}: anything`,
    ]);
  });

  it("a board that doesn't answer gives board.timeout naming the sketch and the baud rate", async () => {
    const device = await startPtyDevice();
    cleanup.push(() => device.stop());
    const harness = hardwareHarness(
      { boards: [{ name: "esp", type: "esp32", port: device.port, baud: 9600 }] },
      {},
    );
    cleanup.push(() => harness.close());
    const { boardRequest } = await import("../../src/hardware/board-protocol.js");
    const board = harness.config.hardware.boards[0]!;
    await expect(boardRequest(harness.hardware.serial, board, { cmd: "slow" }, 150)).rejects.toMatchObject({
      code: "board.timeout",
      message: expect.stringMatching(/sketch.*9600/),
    });
  });
});
