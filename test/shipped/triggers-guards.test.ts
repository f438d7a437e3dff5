import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import mqtt from "mqtt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/triggers/webhook-handler.js";
import { waitFor } from "../fakes/http-util.js";
import { type ChatRequestBody, type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { hasPrograms } from "../helpers/requires.js";
import { hasMosquittoWithUsers, type Mosquitto, startMosquitto } from "../triggers/mosquitto.js";
import { rawPost, respelledHeaders } from "../triggers/webhook-replays.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The trigger guards in the built CLI: the model (a scripted fake) asks trigger_add for a serial device that is not
 * a configured board and for the attacker's MQTT broker; a captured webhook is replayed re-spelled; a retained
 * MQTT message meets two restarts.
 */

const OWNER = 501;
const USER = "magpie";
const PASSWORD = "home-broker-password";
const SECRET = "shipped-guards-secret-0123456789";

const cleanups: Array<() => unknown> = [];

/** A PTY pair from socat: the device path Magpie may be asked to open, and a writer on the device's side. */
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

function lastToolResults(body: ChatRequestBody): Array<Record<string, unknown>> {
  const messages = body.messages;
  const calls = messages.findLastIndex((message) => message.role === "assistant" && message.tool_calls);
  return messages
    .slice(calls + 1)
    .filter((message) => message.role === "tool")
    .map((message) => JSON.parse(String(message.content)) as Record<string, unknown>);
}

describe.runIf(hasMosquittoWithUsers() && hasPrograms("socat"))("shipped build: trigger guards", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let home: Mosquitto;
  let attacker: Mosquitto;
  let board: Awaited<ReturnType<typeof ptyPair>>;
  let modem: Awaited<ReturnType<typeof ptyPair>>;
  let bot: ShippedBot;
  const topic = `house-${Date.now()}/door`;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    home = await startMosquitto({ users: { [USER]: PASSWORD } });
    attacker = await startMosquitto({ users: { [USER]: PASSWORD }, log: true });
    board = await ptyPair("board");
    modem = await ptyPair("modem");
    // Retained before Magpie ever starts: it arrives with the first subscription.
    const client = await mqtt.connectAsync(home.url, { username: USER, password: PASSWORD });
    await client.publishAsync(topic, "open", { qos: 1, retain: true });
    await client.endAsync();
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        mqtt: { url: home.url, username: USER, password: PASSWORD },
        hardware: { boards: [{ name: "sensors", type: "esp32", port: board.path }] },
        triggers: {
          deploy: {
            on: { webhook: { secret: SECRET } },
            do: { message: "Deploy of {{event.payload.repo}}" },
            deliver: { channel: "telegram", chat_id: OWNER },
          },
          door: {
            on: { mqtt: { topic } },
            do: { message: "door {{event.payload}}" },
            deliver: { channel: "telegram", chat_id: OWNER },
          },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await attacker?.stop();
    await home?.stop();
    await llm?.close();
    await telegram?.close();
  });

  const sent = () => telegram.callsOf("sendMessage").map((call) => String(call.body.text));
  /** How often the bot subscribed to the door's topic (once per start). */
  const subscribed = () => bot.logsOf("mqtt-subscribed").filter((line) => line.filter === topic).length;

  it("attack: trigger_add by the model can't open another serial device or reach another broker with the credentials", async () => {
    let results: Array<Record<string, unknown>> = [];
    const add = (name: string, on: unknown, message = "{{event.line}}{{event.topic}}") => ({
      name: "trigger_add",
      arguments: { name, on, do: { message } },
    });
    llm.script(
      reply.toolCalls([
        add("modem", { serial: { port: modem.path, match: "." } }),
        add("spy", { mqtt: { topic: "#", url: attacker.url } }),
        add("all", { mqtt: { topic: "#" } }),
        add("canary-serial", { serial: { port: "sensors", match: "^BOARD" } }, "serial {{event.line}}"),
        add("canary-mqtt", { mqtt: { topic: "canary/ping" } }, "mqtt {{event.payload}}"),
      ]),
      reply.text("Done.", (body) => {
        results = lastToolResults(body);
      }),
    );
    telegram.pushMessage({
      chat: { id: OWNER, type: "private" },
      from: { id: OWNER },
      text: "watch my things",
    });
    await waitFor(() => sent().includes("Done."), "the answer", 15_000);
    llm.assertDone();
    const codes = results.map((result) => (result.error as { code?: string } | undefined)?.code ?? "made");
    expect(codes).toEqual(["trigger.invalid", "trigger.invalid", "trigger.invalid", "made", "made"]);
    // The made ones work; the modem's line and the attacker's broker see nothing of Magpie.
    await modem.send("AT+SECRET modem line");
    await board.send("BOARD ok");
    await waitFor(() => sent().includes("serial BOARD ok"), "the board's line", 10_000);
    const client = await mqtt.connectAsync(home.url, { username: USER, password: PASSWORD });
    await waitFor(
      async () => {
        await client.publishAsync("canary/ping", "pong", { qos: 1 });
        return sent().includes("mqtt pong");
      },
      "the MQTT canary",
      10_000,
    );
    await client.endAsync();
    expect(sent().join("\n")).not.toContain("modem line");
    expect(attacker.log()).not.toMatch(/New client connected|not authorised|SUBSCRIBE/);
  });

  it("attack: a captured webhook replayed with its signature re-spelled 11 ways is accepted once and acts once", async () => {
    const body = JSON.stringify({ repo: "captured" });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = signWebhook(SECRET, timestamp, body);
    const headers: Array<[string, string]> = [
      ["X-Magpie-Timestamp", ` ${timestamp}`],
      ["X-Magpie-Signature", ` ${signature}`],
    ];
    expect(await rawPost(bot.url, "/hooks/deploy", headers, body)).toBe(202);
    const replays: number[] = [];
    for (const respelled of respelledHeaders(timestamp, signature))
      replays.push(await rawPost(bot.url, "/hooks/deploy", respelled, body));
    expect(replays).toEqual(Array(11).fill(401));
    await waitFor(() => sent().includes("Deploy of captured"), "the message");
    // A later, different request is the canary: once it is delivered, any replay's message would be too.
    const later = JSON.stringify({ repo: "later" });
    const laterHeaders: Array<[string, string]> = [
      ["X-Magpie-Timestamp", ` ${timestamp}`],
      ["X-Magpie-Signature", ` ${signWebhook(SECRET, timestamp, later)}`],
    ];
    expect(await rawPost(bot.url, "/hooks/deploy", laterHeaders, later)).toBe(202);
    await waitFor(() => sent().includes("Deploy of later"), "the canary");
    expect(sent().filter((text) => text === "Deploy of captured")).toHaveLength(1);
  });

  it("attack: a captured webhook replayed right after a restart (still within the window) is refused and acts once", async () => {
    const body = JSON.stringify({ repo: "before-restart" });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers: Array<[string, string]> = [
      ["X-Magpie-Timestamp", ` ${timestamp}`],
      ["X-Magpie-Signature", ` ${signWebhook(SECRET, timestamp, body)}`],
    ];
    expect(await rawPost(bot.url, "/hooks/deploy", headers, body)).toBe(202);
    await waitFor(() => sent().includes("Deploy of before-restart"), "the message");
    await bot.restart();
    // The identical bytes again, seconds later: the timestamp is fresh, the signature good — and already used.
    expect(await rawPost(bot.url, "/hooks/deploy", headers, body)).toBe(401);
    const later = JSON.stringify({ repo: "after-restart" });
    const laterHeaders: Array<[string, string]> = [
      ["X-Magpie-Timestamp", ` ${timestamp}`],
      ["X-Magpie-Signature", ` ${signWebhook(SECRET, timestamp, later)}`],
    ];
    expect(await rawPost(bot.url, "/hooks/deploy", laterHeaders, later)).toBe(202);
    await waitFor(() => sent().includes("Deploy of after-restart"), "the canary");
    expect(sent().filter((text) => text === "Deploy of before-restart")).toHaveLength(1);
  }, 60_000);

  it("attack: a retained message is handled once over two restarts; one changed while stopped is handled once", async () => {
    await waitFor(() => sent().includes("door open"), "the retained state", 10_000);
    const publish = async (payload: string, retain: boolean) => {
      const client = await mqtt.connectAsync(home.url, { username: USER, password: PASSWORD });
      await client.publishAsync(topic, payload, { qos: 1, retain });
      await client.endAsync();
    };
    for (const round of ["after-restart-1", "after-restart-2"]) {
      const before = subscribed();
      await bot.restart();
      // Subscribed again: the broker has sent the retained message once more; a plain message after it shows it was judged.
      await waitFor(() => subscribed() > before, "the subscriptions after the restart", 10_000);
      await publish(round, false);
      await waitFor(() => sent().includes(`door ${round}`), round, 10_000);
    }
    const before = subscribed();
    await bot.restart({ whileStopped: () => publish("closed", true) });
    await waitFor(() => subscribed() > before, "the subscriptions after the last restart", 10_000);
    await publish("end", false);
    await waitFor(() => sent().includes("door end"), "the last canary", 10_000);
    const doors = sent().filter((text) => text.startsWith("door "));
    expect(doors).toEqual([
      "door open",
      "door after-restart-1",
      "door after-restart-2",
      "door closed",
      "door end",
    ]);
  }, 90_000);
});
