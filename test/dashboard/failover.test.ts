import { AxeBuilder } from "@axe-core/playwright";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { deliveryFailoverFeature } from "../../src/app/delivery-failover-feature.js";
import type { MagpieFeature } from "../../src/app/feature.js";
import { undeliverableFeature } from "../../src/app/undeliverable-feature.js";
import { CHROMIUM_ARGS } from "../../src/browser/browser-service.js";
import { findChromium } from "../../src/browser/find-chromium.js";
import { ChannelSendError } from "../../src/lib/errors.js";
import { waitFor } from "../fakes/http-util.js";
import { type NtfyFake, startNtfyFake } from "../fakes/ntfy.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms } from "../helpers/requires.js";

const TOKEN = "failover-dashboard-token-0123456789";

const blocked = () =>
  new ChannelSendError("Forbidden: bot was blocked by the user", { permanent: true, code: "channel.403" });

/** Everyone on the test channel is an owner: their direct chat's replies may fail over. */
const owners: MagpieFeature = {
  name: "roles",
  provides: ["authority"],
  setup: () => ({ authority: { roleOf: () => "owner", mayDeliver: () => true } }),
};

/**
 * DESIGN.md → Delivery failover: "magpie trace, the dashboard and /metrics show which path delivered". In a real
 * headless Chromium: the home page lists a refused job report and a refused owner reply with the path that
 * delivered each, and each trace page (the outbox item's, the message's) names it.
 */
describe.runIf(hasPrograms("chromium"))("dashboard: which path delivered a failed-over item", () => {
  let browser: Browser;
  let ntfy: NtfyFake;
  let magpie: TestApp;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: findChromium(undefined)!, args: CHROMIUM_ARGS });
    ntfy = await startNtfyFake();
    magpie = await startTestApp({
      features: [owners, undeliverableFeature, deliveryFailoverFeature, dashboardFeature],
      config: {
        http: { dashboard: { enabled: true, token: TOKEN } },
        notify: { ntfy: { url: ntfy.url, topic: "owner" } },
        delivery: { fallback: ["ntfy"] },
      },
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await magpie?.stop();
    await ntfy?.close();
  });

  it("a refused job report and a refused owner reply: home lists both with 'delivered via ntfy (failover)', and their trace pages say so", async () => {
    const { app, channel, llm } = magpie;
    channel!.failNext(blocked());
    const outboxId = app.store.outbox.enqueue(
      { channel: "test", chatId: "chat-blocked" },
      { text: "Nightly backup: 3 files, 12 MB", format: "plain" },
      { origin: "cron" },
    );
    app.outbox.wake();
    await ntfy.waitFor(1);
    llm!.script(reply.text("The disk is 93% full."));
    channel!.failNext(blocked());
    const accepted = await channel!.receive("how full is the disk?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    await ntfy.waitFor(2);
    await waitFor(() => app.store.inbox.get(inboxId)?.outcome === "undeliverable", "the reply undeliverable");

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${magpie.url}/?token=${TOKEN}`);
      const report = page.locator(`[data-undelivered-outbox="${outboxId}"]`);
      await expect.poll(() => report.innerText()).toContain("delivered via ntfy (failover)");
      expect(await report.innerText()).toContain("to test:chat-blocked");
      expect(await report.innerText()).toContain("Nightly backup: 3 files, 12 MB");
      const message = page.locator(`[data-failed-message="${inboxId}"]`);
      expect(await message.innerText()).toContain("undeliverable");
      expect(await message.innerText()).toContain("delivered via ntfy (failover)");

      await report.getByRole("link", { name: `Trace of outbox item ${outboxId}` }).click();
      await page.waitForURL(`**/ui/trace/outbox/${outboxId}`);
      expect(await page.locator("[data-failover-path]").innerText()).toBe("delivered via ntfy (failover)");
      expect(await page.locator("#trace-outbox").innerText()).toMatch(
        new RegExp(`outbox ${outboxId} \\(cron\\) · failed after 1 attempt\\(s\\).*blocked by the user`),
      );
      // The new page meets the dashboard's accessibility bar (WCAG 2.1 AA, no serious or critical violation).
      const axe = await new AxeBuilder({ page })
        .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
        .options({ resultTypes: ["violations"] })
        .setLegacyMode(true)
        .analyze();
      expect(
        axe.violations.filter(
          (violation) => violation.impact === "serious" || violation.impact === "critical",
        ),
      ).toEqual([]);

      await page.goto(`${magpie.url}/ui/trace/${inboxId}`);
      expect(await page.locator("#trace").innerText()).toContain("delivered via ntfy (failover)");

      const missing = await page.goto(`${magpie.url}/ui/trace/outbox/999999`);
      expect(missing?.status()).toBe(404);
    } finally {
      await context.close();
    }
    // One phone message per item: the report and the reply, nothing else.
    expect(ntfy.messages).toHaveLength(2);
  }, 60_000);
});
