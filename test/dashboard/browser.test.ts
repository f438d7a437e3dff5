import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebChannel } from "../../channels/web.js";
import { accessFeature } from "../../src/app/access-feature.js";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { memoryFeature } from "../../src/app/memory-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { traceFeature } from "../../src/app/trace-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { CHROMIUM_ARGS } from "../../src/browser/browser-service.js";
import { findChromium } from "../../src/browser/find-chromium.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms } from "../helpers/requires.js";

const TOKEN = "browser-test-token-0123456789";
/** Screenshots for docs/dashboard.md: `<page>.png` at desktop size, `<page>-phone.png` at 390 px. */
const SCREENSHOTS = path.resolve("docs/images/dashboard");

/** The two sizes every page is checked at: a desktop in light mode and a phone (390 px, touch) in dark mode. */
const SIZES = {
  desktop: { viewport: { width: 1280, height: 900 }, colorScheme: "light" as const },
  phone: {
    viewport: { width: 390, height: 844 },
    colorScheme: "dark" as const,
    isMobile: true,
    hasTouch: true,
  },
};
type Size = keyof typeof SIZES;

let browser: Browser;
let magpie: TestApp;

beforeAll(async () => {
  browser = await chromium.launch({
    // The Chromium the product itself would launch (chromium, chromium-browser or google-chrome on the PATH).
    executablePath: findChromium(undefined)!,
    args: CHROMIUM_ARGS,
  });
  magpie = await startTestApp({
    features: [
      securityFeature,
      memoryFeature,
      schedulerFeature,
      usageFeature,
      traceFeature,
      dashboardFeature,
    ],
    config: {
      timezone: "Europe/Berlin",
      http: { dashboard: { enabled: true, token: TOKEN } },
      llm: {
        fallbacks: [{ model: "backup-model" }],
        prices: { "test-model": { input: 0.15, output: 0.6 }, "backup-model": { input: 0.15, output: 0.6 } },
      },
      budgets: { daily: { tokens: 2_000, usd: 0.5 }, perChat: { tokens: 100 } },
    },
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await magpie?.stop();
});

/** A signed-in browser context at one size. */
async function signedIn(size: Size, url = magpie.url): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(SIZES[size]);
  const page = await context.newPage();
  await page.goto(`${url}/?token=${TOKEN}`);
  await page.waitForFunction(() => "htmx" in globalThis);
  return { context, page };
}

/** Messages answered, answered by the fallback and failed; cron runs; a memory; a pending approval and question. */
async function realActivity(): Promise<{ failedInbox: number; settle: () => Promise<void> }> {
  const { llm, channel, app } = magpie;
  const send = async (text: string) => {
    const before = channel!.sent.length;
    const accepted = await channel!.receive(text);
    await channel!.waitForSent(before + 1);
    return accepted.status === "accepted" ? accepted.inboxId : -1;
  };
  llm!.script(reply.text("The shed is at 21 °C and the door is closed."));
  await send("How warm is the shed?");
  llm!.script(reply.error(503, "primary down"), reply.text("Backup model here: all lights are off."));
  await send("Are the lights off?");
  llm!.script(reply.error(503, "primary down"), reply.error(503, "backup down"));
  const failedInbox = await send("Water the tomatoes at 7");
  const web = app.adapters.get("web") as WebChannel;
  llm!.script(reply.text("Yes, the garage door has been closed since 18:40."));
  await web.receive("Is the garage door closed?", randomUUID());
  await expect
    .poll(() => web.transcript().some((line) => line.text.includes("garage door has been closed")))
    .toBe(true);

  const scheduler = app.context.services.scheduler!;
  scheduler.add({ name: "morning-brief", expression: "0 7 * * *", message: "Good morning" });
  const backup = scheduler.add({
    name: "nightly-backup",
    expression: "30 2 * * *",
    command: "echo backed up",
  });
  const broken = scheduler.add({ name: "disk-check", expression: "*/30 * * * *", command: "df /nope" });
  await scheduler.runNow(backup.id);
  await scheduler.runNow(broken.id);
  await app.context.services.memory!.store({
    agent: "main",
    key: "shed-sensor",
    content: "The shed's temperature sensor is on GPIO 4.",
    role: "owner",
  });

  const approval = app.context.services.approvals!.request({
    sessionKey: "test:chat-1",
    target: { channel: "test", chatId: "chat-1" },
    approver: { channel: "test", userId: "1", role: "owner" },
    tool: "shell",
    action: "sudo systemctl restart mosquitto",
    reason: "risk:high",
    timeoutMs: 600_000,
  });
  const controller = new AbortController();
  const question = app.context.services.questions!.ask({
    sessionKey: "test:chat-1",
    target: { channel: "test", chatId: "chat-1" },
    askedOf: { channel: "test", userId: "1", role: "owner" },
    prompt: "Which backup should I restore?",
    options: [
      { id: "last", label: "Last night's" },
      { id: "weekly", label: "Sunday's" },
    ],
    allowCustom: true,
    timeoutMs: 600_000,
    signal: controller.signal,
  });
  return {
    failedInbox,
    settle: async () => {
      controller.abort();
      await question;
      const pending = app.context.services
        .approvals!.repository.recent(50)
        .find((r) => r.status === "pending");
      if (pending) app.context.services.approvals!.decideFromDashboard(pending.id, "denied");
      await approval;
    },
  };
}

/** The little of the DOM the layout check reads (the tests compile without the DOM library). */
interface PageWindow {
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    querySelectorAll(selector: string): Iterable<{
      tagName: string;
      textContent: string | null;
      getAttribute(name: string): string | null;
      getBoundingClientRect(): { width: number; height: number };
    }>;
  };
}

/** Page-level checks at one size: nothing scrolls sideways; on a phone, every control is at least 44 px. */
async function layoutProblems(page: Page, size: Size): Promise<string[]> {
  return page.evaluate((phone) => {
    const { document, innerWidth } = globalThis as unknown as PageWindow;
    const problems: string[] = [];
    const width = document.documentElement.scrollWidth;
    if (width > innerWidth) problems.push(`scrolls sideways: ${width} > ${innerWidth}`);
    if (!phone) return problems;
    for (const control of document.querySelectorAll(
      "button, input:not([type=hidden]), select, textarea, nav a",
    )) {
      const box = control.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) continue;
      if (box.height < 44 || box.width < 44) {
        const label = control.textContent?.trim() || control.getAttribute("name");
        problems.push(
          `${control.tagName.toLowerCase()} "${label}" is ${Math.round(box.width)}×${Math.round(box.height)}`,
        );
      }
    }
    return problems;
  }, size === "phone");
}

/** Serious and critical axe violations, one line each. */
async function axeViolations(page: Page): Promise<string[]> {
  // WCAG 2.1 A and AA rules, violations only. Legacy mode runs axe in the page itself: the default opens a new
  // page per check to merge the frames' results (the dashboard has no frames), which took 2-3 s each here.
  const results = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .options({ resultTypes: ["violations"] })
    .setLegacyMode(true)
    .analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.nodes
          .slice(0, 3)
          .map((node) => node.target.join(" "))
          .join(", ")}`,
    );
}

describe.runIf(hasPrograms("chromium"))("dashboard in headless Chromium", () => {
  it("without the token the browser gets 401 and no page", async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${magpie.url}/`);
    expect(response?.status()).toBe(401);
    expect(await page.locator("nav").count()).toBe(0);
    await page.close();
  });

  it("every page at desktop and phone size: no sideways scrolling, 44 px tap targets, no serious axe violation; screenshots", async () => {
    const activity = await realActivity();
    const sessionKey = encodeURIComponent("test:chat-1");
    const pages: Array<[string, string]> = [
      ["home", "/"],
      ["chat", "/ui/chat"],
      ["approvals", "/ui/approvals"],
      ["sessions", "/ui/sessions"],
      ["session", `/ui/sessions/${sessionKey}`],
      ["trace", `/ui/trace/${activity.failedInbox}`],
      ["cron", "/ui/cron"],
      ["memory", "/ui/memory"],
      ["audit", "/ui/audit"],
      ["usage", "/ui/usage"],
    ];
    // Each size in its own context, side by side: most of the time is spent waiting for the browser.
    const sweep = async (size: Size): Promise<string[]> => {
      const problems: string[] = [];
      const { context, page } = await signedIn(size);
      for (const [name, url] of pages) {
        await page.goto(`${magpie.url}${url}`);
        await page.waitForFunction(() => "htmx" in globalThis);
        if (name === "home") {
          await page.locator("[data-approval]").waitFor();
          await page.locator("[data-failed-message]").waitFor();
        }
        for (const problem of [...(await layoutProblems(page, size)), ...(await axeViolations(page))]) {
          problems.push(`${name} (${size}): ${problem}`);
        }
        await page.screenshot({
          path: path.join(SCREENSHOTS, `${name}${size === "phone" ? "-phone" : ""}.png`),
          fullPage: true,
        });
      }
      await context.close();
      return problems;
    };
    // The home page in the other colour scheme at each size too.
    const otherScheme = async (size: Size, scheme: "light" | "dark"): Promise<string[]> => {
      const context = await browser.newContext({ ...SIZES[size], colorScheme: scheme });
      const page = await context.newPage();
      await page.goto(`${magpie.url}/?token=${TOKEN}`);
      await page.locator("[data-approval]").waitFor();
      const problems = [...(await layoutProblems(page, size)), ...(await axeViolations(page))].map(
        (problem) => `home (${size}, ${scheme}): ${problem}`,
      );
      if (scheme === "dark") await page.screenshot({ path: path.join(SCREENSHOTS, "home-dark.png") });
      await context.close();
      return problems;
    };
    const problems = (
      await Promise.all([
        sweep("desktop"),
        sweep("phone"),
        otherScheme("desktop", "dark"),
        otherScheme("phone", "light"),
      ])
    ).flat();
    await activity.settle();
    expect(problems).toEqual([]);
  }, 120_000);

  it("home: shows times in the configured zone with the exact time on hover; a pending approval is approved there", async () => {
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
    const { context, page } = await signedIn("phone");
    expect(new URL(page.url()).search).toBe("");
    await expect.poll(() => page.locator("h1").textContent()).toBe("Home");
    const item = page.locator("[data-approval]", { hasText: "rm -rf build/" });
    const asked = item.locator("time").first();
    expect(await asked.textContent()).toBe("just now");
    // Berlin is GMT+1 in winter and GMT+2 in summer: the offset of the moment the test runs.
    const offset = new Intl.DateTimeFormat("en-US", {
      timeZone: "Europe/Berlin",
      timeZoneName: "shortOffset",
    })
      .formatToParts(Date.now())
      .find((part) => part.type === "timeZoneName")!.value;
    expect(await asked.getAttribute("title")).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ${offset.replace("+", "\\+")}$`),
    );
    await item.locator("button:has-text('Approve')").click();
    expect(await decision).toBe("approved");
    await page.locator("#home-notice", { hasText: "Approved: shell" }).waitFor();
    // The change feed refreshes the list: the approval is gone.
    await expect.poll(() => page.locator("[data-approval]", { hasText: "rm -rf build/" }).count()).toBe(0);
    await context.close();
  }, 30_000);

  it("approvals page: sees a pending approval and approves it", async () => {
    const gate = magpie.app.context.services.approvals!;
    const decision = gate.request({
      sessionKey: "test:1",
      target: { channel: "test", chatId: "1" },
      approver: { channel: "test", userId: "1", role: "owner" },
      tool: "shell",
      action: "rm -rf dist/",
      reason: "risk:high",
      timeoutMs: 60_000,
    });
    const { context, page } = await signedIn("desktop");
    await page.click("nav >> text=Approvals");
    await page.locator("[data-approval] pre", { hasText: "rm -rf dist/" }).waitFor();
    await page.click("[data-approval] button:has-text('Approve')");
    expect(await decision).toBe("approved");
    await page.locator("text=Approved: shell").waitFor();
    await context.close();
  }, 30_000);

  it("shows a cron job and its last run; run now's run appears live; pause and resume", async () => {
    const scheduler = magpie.app.context.services.scheduler!;
    const job = scheduler.add(
      { name: "nightly-report", expression: "0 3 * * *", message: "good night" },
      { createdFrom: { channel: "test", chatId: "1" } },
    );
    await scheduler.runNow(job.id);
    const { context, page } = await signedIn("desktop");
    await page.click("nav >> text=Cron");
    const row = page.locator("[data-job='nightly-report']");
    await row.locator("li[data-run]").first().waitFor();
    expect(await row.locator("li[data-run]").count()).toBe(1);
    expect(await row.textContent()).toContain("0 3 * * *");

    // Another run, started outside the page (as `magpie cron run` would), shows up through the event stream.
    await scheduler.runNow(job.id);
    await expect.poll(() => row.locator("li[data-run]").count(), { timeout: 5_000 }).toBe(2);

    await row.locator("button:has-text('Run now')").click();
    await expect.poll(() => row.locator("li[data-run]").count(), { timeout: 5_000 }).toBe(3);

    await row.locator("button:has-text('Pause')").click();
    await row.locator("button:has-text('Resume')").waitFor();
    expect(scheduler.get(job.id).status).toBe("paused");
    await row.locator("button:has-text('Resume')").click();
    await row.locator("button:has-text('Pause')").waitFor();
    expect(scheduler.get(job.id).status).toBe("active");
    await context.close();
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
    const { context, page } = await signedIn("desktop", chat.url);
    await page.click("nav >> text=Chat");
    await page.waitForFunction(() => "htmx" in globalThis);
    await page.fill("textarea[name=text]", "hi there");
    await page.click("button:has-text('Send')");
    await page.locator(".chat-owner", { hasText: "hi there" }).waitFor();
    await page.locator(".chat-magpie", { hasText: "Hello from Magpie" }).waitFor({ timeout: 10_000 });
    expect(JSON.stringify(llm.requests[0]!.messages)).toContain("hi there");

    llm.script(
      reply.toolCalls([{ name: "shell", arguments: { command: "echo approved-run" } }]),
      reply.text("done"),
    );
    await page.fill("textarea[name=text]", "run it");
    await page.click("button:has-text('Send')");
    await page.locator(".chat-magpie", { hasText: "echo approved-run" }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(SCREENSHOTS, "chat-approval.png") });

    await page.click("nav >> text=Approvals");
    await page.locator("[data-approval] pre", { hasText: "echo approved-run" }).waitFor();
    await page.click("[data-approval] button:has-text('Approve')");
    await page.locator("text=Approved: shell").waitFor();
    await page.click("nav >> text=Chat");
    // The approved shell command runs in the sandbox and the model answers again: slower on a busy runner.
    await page.locator(".chat-magpie", { hasText: /\bdone\s*$/ }).waitFor({ timeout: 20_000 });
    const toolMessage = llm.requests[2]!.messages.find((message) => message.role === "tool");
    expect(String(toolMessage?.content)).toContain("approved-run");
    llm.assertDone();
    await context.close();
  }, 40_000);
});
