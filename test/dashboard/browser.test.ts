import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { CHROMIUM_ARGS } from "../../src/browser/browser-service.js";
import { findChromium } from "../../src/browser/find-chromium.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms } from "../helpers/requires.js";

const TOKEN = "browser-test-token-0123456789";
/** Screenshots for the README's Dashboard section. */
const SCREENSHOTS = path.resolve("docs/images/dashboard");

let browser: Browser;
let magpie: TestApp;

beforeAll(async () => {
  browser = await chromium.launch({
    // The Chromium the product itself would launch (chromium, chromium-browser or google-chrome on the PATH).
    executablePath: findChromium(undefined)!,
    args: CHROMIUM_ARGS,
  });
  magpie = await startTestApp({
    llm: false,
    features: [securityFeature, schedulerFeature, dashboardFeature],
    config: { http: { dashboard: { enabled: true, token: TOKEN } } },
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await magpie?.stop();
});

describe.runIf(hasPrograms("chromium"))("dashboard in headless Chromium", () => {
  it("without the token the browser gets 401 and no page", async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${magpie.url}/`);
    expect(response?.status()).toBe(401);
    expect(await page.locator("nav").count()).toBe(0);
    await page.close();
  });

  it("signs in with the token, sees a pending approval and approves it", async () => {
    const gate = magpie.app.context.services.approvals!;
    const decision = gate.request({
      sessionKey: "test:1",
      target: { channel: "test", chatId: "1" },
      approver: { channel: "test", userId: "1", role: "owner" },
      tool: "shell",
      action: "rm -rf build/",
      reason: "risk:high",
      timeoutMs: 60_000,
    });
    const page = await browser.newPage();
    await page.goto(`${magpie.url}/?token=${TOKEN}`);
    expect(new URL(page.url()).search).toBe("");
    await expect.poll(() => page.locator("h1").textContent()).toBe("Status");
    await page.screenshot({ path: path.join(SCREENSHOTS, "status.png") });

    await page.click("text=Approvals");
    await page.locator("[data-approval] pre", { hasText: "rm -rf build/" }).waitFor();
    await page.screenshot({ path: path.join(SCREENSHOTS, "approvals.png") });
    await page.click("[data-approval] button:has-text('Approve')");
    expect(await decision).toBe("approved");
    await page.locator("text=Approved: shell").waitFor();
    await page.close();
  }, 30_000);

  it("shows a cron job and its last run; run now's run appears live; pause and resume", async () => {
    const scheduler = magpie.app.context.services.scheduler!;
    const job = scheduler.add(
      { name: "nightly-report", expression: "0 3 * * *", message: "good night" },
      { createdFrom: { channel: "test", chatId: "1" } },
    );
    await scheduler.runNow(job.id);
    const page = await browser.newPage();
    await page.goto(`${magpie.url}/?token=${TOKEN}`);
    await page.click("nav >> text=Cron");
    const row = page.locator("[data-job='nightly-report']");
    await row.locator("li[data-run]").first().waitFor();
    expect(await row.locator("li[data-run]").count()).toBe(1);
    expect(await row.textContent()).toContain("0 3 * * *");
    expect(await row.textContent()).toMatch(/\d{4}-\d\d-\d\dT03:00:00/);

    // Another run, started outside the page (as `magpie cron run` would), shows up through the event stream.
    await page.waitForFunction(() => "htmx" in globalThis);
    await scheduler.runNow(job.id);
    await expect.poll(() => row.locator("li[data-run]").count(), { timeout: 5_000 }).toBe(2);

    await row.locator("button:has-text('Run now')").click();
    await expect.poll(() => row.locator("li[data-run]").count(), { timeout: 5_000 }).toBe(3);
    await page.screenshot({ path: path.join(SCREENSHOTS, "cron.png") });

    await row.locator("button:has-text('Pause')").click();
    await row.locator("button:has-text('Resume')").waitFor();
    expect(scheduler.get(job.id).status).toBe("paused");
    await row.locator("button:has-text('Resume')").click();
    await row.locator("button:has-text('Pause')").waitFor();
    expect(scheduler.get(job.id).status).toBe("active");
    await page.close();
  }, 30_000);
});

describe.runIf(hasPrograms("chromium"))("webchat in headless Chromium", () => {
  let chat: TestApp;

  beforeAll(async () => {
    chat = await startTestApp({
      channel: null,
      features: [accessFeature, securityFeature, dashboardFeature],
      config: {
        http: { dashboard: { enabled: true, token: TOKEN } },
        security: { approvals: { require: ["shell"], timeoutSecs: 20 } },
      },
    });
  });
  afterAll(() => chat?.stop());

  it("round trip with the scripted LLM; a turn's approval is approved in the browser and the tool runs", async () => {
    const llm = chat.llm!;
    llm.script(reply.text("Hello from Magpie"));
    const page = await browser.newPage();
    await page.goto(`${chat.url}/?token=${TOKEN}`);
    await page.click("nav >> text=Chat");
    await page.waitForFunction(() => "htmx" in globalThis);
    await page.fill("textarea[name=text]", "hi there");
    await page.click("button:has-text('Send')");
    await page.locator(".chat-owner pre", { hasText: "hi there" }).waitFor();
    await page.locator(".chat-magpie pre", { hasText: "Hello from Magpie" }).waitFor({ timeout: 10_000 });
    expect(JSON.stringify(llm.requests[0]!.messages)).toContain("hi there");

    llm.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "echo approved-run" } }]),
      reply.text("done"),
    );
    await page.fill("textarea[name=text]", "run it");
    await page.click("button:has-text('Send')");
    await page.locator(".chat-magpie pre", { hasText: "Approval needed" }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(SCREENSHOTS, "chat.png") });

    await page.click("nav >> text=Approvals");
    await page.locator("[data-approval] pre", { hasText: "echo approved-run" }).waitFor();
    await page.click("[data-approval] button:has-text('Approve')");
    await page.locator("text=Approved: shell").waitFor();
    await page.click("nav >> text=Chat");
    // The approved shell command runs in the sandbox and the model answers again: slower on a busy runner.
    await page.locator(".chat-magpie pre", { hasText: /^done$/ }).waitFor({ timeout: 20_000 });
    const toolMessage = llm.requests[2]!.messages.find((message) => message.role === "tool");
    expect(String(toolMessage?.content)).toContain("approved-run");
    llm.assertDone();
    await page.close();
  }, 40_000);
});
