import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../fakes/http-util.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * `hardware.watch` in the built CLI: the watch becomes a gpio trigger at start-up (`/triggers` lists it with its
 * counts and where it reports), whose source opens the pin through the hardware service — on this box, without
 * GPIO, the failure is logged and the bot runs on.
 */

const OWNER = 502;

describe("shipped build: hardware.watch runs as a gpio trigger", () => {
  let telegram: FakeTelegram;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    bot = await ShippedBot.start({
      config: {
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
        hardware: {
          boards: [{ name: "pi", type: "rpi-gpio" }],
          pins: { door: { line: 17, direction: "in", edge: "both", debounceMs: 30 } },
          watch: [{ pin: "door", notify: { channel: "telegram", chat_id: OWNER }, maxPerMinute: 3 }],
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await telegram?.close();
  });

  it("/triggers lists hardware.watch.door on the pin, reporting to the chat; the pin is opened by the trigger", async () => {
    const sent = () => telegram.callsOf("sendMessage").map((call) => String(call.body.text));
    telegram.pushMessage({ chat: { id: OWNER, type: "private" }, from: { id: OWNER }, text: "/triggers" });
    await waitFor(() => sent().some((text) => text.includes("hardware.watch.door")), "the /triggers answer");
    const listing = sent().find((text) => text.includes("hardware.watch.door")) ?? "";
    expect(listing).toContain(`• hardware.watch.door — gpio door → watch → telegram:${OWNER}`);
    expect(listing).toContain("fired 0, filtered out 0, errors 0, dropped 0");
    const opened = bot.logsOf("trigger-gpio-watch-failed");
    expect(opened.map((line) => [line.trigger, line.pin])).toEqual([["hardware.watch.door", "door"]]);
  });
});
