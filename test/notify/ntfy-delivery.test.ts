import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { createPhoneNotifier } from "../../src/notify/phone.js";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { type PushoverFake, startPushoverFake } from "../fakes/pushover.js";
import { makeRig, type Rig } from "../scheduler/harness.js";

describe("deliver: {ntfy: true} for jobs", () => {
  let rig: Rig | undefined;
  let ntfy: NtfyFake | undefined;
  let pushover: PushoverFake | undefined;
  afterEach(async () => {
    await rig?.cleanup();
    await ntfy?.close();
    await pushover?.close();
    rig = undefined;
  });

  it("publishes a job's report to the ntfy topic, and only there when Pushover isn't asked for", async () => {
    ntfy = await startNtfyFake({ token: "tk_owner" });
    pushover = await startPushoverFake();
    const notify = parseConfig({
      notify: {
        pushover: { token: "app-token", user: "user-key", proxy: pushover.proxyUrl },
        ntfy: { url: ntfy.url, topic: "magpie", token: "tk_owner" },
      },
    }).notify;
    rig = makeRig({ notifier: createPhoneNotifier(notify) });
    const job = rig.scheduler.add({
      name: "backup check",
      expression: "0 3 * * *",
      message: "backups are fine",
      deliver: { ntfy: true },
    });
    rig.scheduler.start();
    const run = await rig.scheduler.runNow(job.id);
    const [published] = await ntfy.waitFor(1);
    expect(published).toMatchObject({ topic: "magpie", authorization: "Bearer tk_owner", priority: 3 });
    expect(published?.message).toContain("backups are fine");
    expect(pushover.notifications).toEqual([]);
    const settled = await waitFor(() => {
      const row = rig?.jobs.getRun(run.id);
      return row?.deliveryState === "delivered" ? row : undefined;
    }, "delivered run");
    expect(settled.delivery).toMatchObject({ ntfy: { status: "sent" } });
  });

  it("records ntfy as not configured when the job asks for it without notify.ntfy", async () => {
    rig = makeRig({ notifier: createPhoneNotifier(parseConfig({}).notify) });
    const job = rig.scheduler.add({
      name: "nowhere",
      expression: "0 3 * * *",
      message: "x",
      deliver: { ntfy: true },
    });
    rig.scheduler.start();
    const run = await rig.scheduler.runNow(job.id);
    const settled = await waitFor(() => {
      const row = rig?.jobs.getRun(run.id);
      return row?.deliveryState === "failed" ? row : undefined;
    }, "failed delivery");
    expect(settled.delivery).toMatchObject({ ntfy: { status: "not_configured" } });
  });
});

describe("deliver: {ntfy: true} for triggers", () => {
  it("is accepted in config (it was refused as not supported), alone or next to a chat", () => {
    const config = parseConfig({
      notify: { ntfy: { url: "http://127.0.0.1:1", topic: "magpie" } },
      triggers: {
        door: {
          on: { webhook: { secret: "s".repeat(32) } },
          do: { message: "door opened" },
          deliver: { ntfy: true },
        },
      },
    });
    expect(config.triggers.door?.deliver).toMatchObject({ ntfy: true, pushover: false });
  });
});
