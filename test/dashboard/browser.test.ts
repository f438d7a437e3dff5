import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const TOKEN = "browser-test-token-0123456789";
/** Screenshots for the README's Dashboard section. */
const SCREENSHOTS = path.resolve("docs/images/dashboard");

let browser: Browser;
let magpie: TestApp;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
    ],
  });
  magpie = await startTestApp({
    llm: false,
    features: [securityFeature, dashboardFeature],
    config: { http: { dashboard: { enabled: true, token: TOKEN } } },
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await magpie?.stop();
});

describe("dashboard in headless Chromium", () => {
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
});
