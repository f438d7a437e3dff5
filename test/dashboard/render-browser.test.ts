import { mkdirSync } from "node:fs";
import path from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accessFeature } from "../../src/app/access-feature.js";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { CHROMIUM_ARGS } from "../../src/browser/browser-service.js";
import { findChromium } from "../../src/browser/find-chromium.js";
import { lastDays } from "../../src/dashboard/charts/days.js";
import { JobStore } from "../../src/scheduler/job-store.js";
import { UsageLedger } from "../../src/usage/ledger.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hasPrograms } from "../helpers/requires.js";

/**
 * What issue 29 asked to see, in headless Chromium at desktop and phone size: the model's Markdown rendered in the
 * webchat (a code block), an approval as a card with a countdown (approved from the card), the usage chart over 30
 * days of ledger rows and each cron job's 14-day strip over its run history. Screenshots for docs/dashboard.md.
 */

const TOKEN = "render-browser-token-0123456789";
const ZONE = "Europe/Berlin";
const SCREENSHOTS = path.resolve("docs/images/dashboard");
const HOUR = 3_600_000;

/** The sizes browser.test.ts checks too: a desktop in light mode, a phone (390 px, touch) in dark mode. */
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
const shot = (name: string, size: Size) =>
  path.join(SCREENSHOTS, `${name}${size === "phone" ? "-phone" : ""}.png`);

const MARKDOWN_ANSWER = [
  "The backup failed because the disk is **full** (98 %). Free some space, then run it again:",
  "",
  "```bash",
  "sudo journalctl --vacuum-size=200M",
  "df -h /srv/backup",
  "```",
  "",
  "- old journals: ~1.4 GB",
  "- `/srv/backup/tmp`: 600 MB of partial archives",
  "",
  "Details: [restic docs](https://restic.readthedocs.io/) · <script>alert('not run')</script>",
].join("\n");

let browser: Browser;
let magpie: TestApp;

/** 30 days of ledger rows (three models, priced) and 14 days of runs of three jobs, as Magpie records them. */
function seedHistory(app: TestApp): void {
  const db = app.app.store.db;
  const ledger = new UsageLedger(db);
  const days = lastDays(Date.now(), ZONE, 30);
  const models: Array<[string, number, number]> = [
    ["gpt-4o-mini", 42_000, 0.6 / 1_000_000],
    ["claude-3-5-haiku", 18_000, 4 / 1_000_000],
    ["text-embedding-3-small", 6_000, 0.02 / 1_000_000],
  ];
  days.forEach((day, index) => {
    models.forEach(([model, base, pricePerToken], modelIndex) => {
      // A week's rhythm and a busy spell, the same on every run.
      const tokens = Math.round(
        base * (0.5 + 0.4 * Math.sin(index / 2 + modelIndex) + (index > 20 ? 0.6 : 0)),
      );
      if (tokens <= 0 || (modelIndex === 1 && index % 7 === 3)) return;
      ledger.insert({
        at: day.start + 9 * HOUR + modelIndex * 60_000,
        origin: "user",
        sessionKey: "telegram:42",
        historyKey: "telegram:42",
        turnId: null,
        jobId: null,
        runId: null,
        taskId: null,
        agent: "main",
        kind: model.startsWith("text-embedding") ? "embedding" : "chat",
        model,
        promptTokens: Math.round(tokens * 0.8),
        completionTokens: tokens - Math.round(tokens * 0.8),
        estimated: false,
        costUsd: tokens * pricePerToken,
      });
    });
  });

  const scheduler = app.app.context.services.scheduler!;
  const jobs = new JobStore(db);
  const strip = lastDays(Date.now(), ZONE, 14);
  const backup = scheduler.add({
    name: "nightly-backup",
    expression: "30 2 * * *",
    command: "echo backed up",
  });
  const brief = scheduler.add({ name: "morning-brief", expression: "0 7 * * *", message: "Good morning" });
  const disk = scheduler.add({ name: "disk-check", expression: "0 */4 * * *", command: "df -h /" });
  const ran = (jobId: number, slot: number, status: "ok" | "error" | "timeout") => {
    const run = jobs.startRun(jobId, "schedule", slot, slot + 500);
    jobs.finishRun(run, status, status === "ok" ? "done" : "exit code 1", slot + 4_000);
  };
  strip.slice(0, -1).forEach((day, index) => {
    const at = (hour: number) => day.start + hour * HOUR;
    if (index === 5) jobs.recordSkipped(backup.id, "schedule", at(2.5), at(8), "Magpie was down", "missed");
    else ran(backup.id, at(2.5), index === 9 ? "error" : "ok");
    if (index === 5) jobs.recordSkipped(brief.id, "schedule", at(7), at(8), "Magpie was down", "missed");
    else if (index === 11) jobs.recordSkipped(brief.id, "schedule", at(7), at(7), "still running", "skipped");
    else ran(brief.id, at(7), "ok");
    for (let hour = 0; hour < 24; hour += 4) {
      if (index === 5 && hour < 8) continue;
      ran(disk.id, at(hour), index === 12 && hour === 16 ? "timeout" : "ok");
    }
  });
}

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: findChromium(undefined)!, args: CHROMIUM_ARGS });
  magpie = await startTestApp({
    channel: null,
    features: [accessFeature, securityFeature, schedulerFeature, usageFeature, dashboardFeature],
    config: {
      timezone: ZONE,
      http: { dashboard: { enabled: true, token: TOKEN } },
      security: { approvals: { require: ["shell"], timeoutSecs: 600 } },
      cron: { maxRunHistory: 500 },
    },
  });
  seedHistory(magpie);
  mkdirSync(SCREENSHOTS, { recursive: true });
}, 30_000);

afterAll(async () => {
  await browser?.close();
  await magpie?.stop();
});

async function signedIn(size: Size, options: { javaScriptEnabled?: boolean } = {}) {
  const context: BrowserContext = await browser.newContext({ ...SIZES[size], ...options });
  const page = await context.newPage();
  await page.goto(`${magpie.url}/?token=${TOKEN}`);
  if (options.javaScriptEnabled !== false) await page.waitForFunction(() => "htmx" in globalThis);
  return { context, page };
}

/** Scrolls `locator` into view, again if a live refresh (the event stream connecting) swapped it meanwhile. */
async function scrollTo(locator: Locator): Promise<void> {
  await expect
    .poll(() =>
      locator.scrollIntoViewIfNeeded({ timeout: 2_000 }).then(
        () => true,
        () => false,
      ),
    )
    .toBe(true);
}

/** Serious and critical axe violations (WCAG 2.1 A and AA), one line each. */
async function axeViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page })
    .withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"])
    .options({ resultTypes: ["violations"] })
    .setLegacyMode(true)
    .analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
    );
}

/** The little of the DOM the layout check reads (the tests compile without the DOM library). */
interface PageWindow {
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    querySelectorAll(selector: string): Iterable<{
      textContent: string | null;
      getBoundingClientRect(): { width: number; height: number };
    }>;
  };
}

/** Nothing scrolls sideways; the card's and the chat's buttons are big enough to tap (44 px). */
async function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as PageWindow;
    const problems: string[] = [];
    const width = document.documentElement.scrollWidth;
    if (width > innerWidth) problems.push(`scrolls sideways: ${width} > ${innerWidth}`);
    for (const button of document.querySelectorAll(".approval-buttons button, #chat-send button")) {
      const box = button.getBoundingClientRect();
      if (box.height < 44 || box.width < 44)
        problems.push(`${button.textContent} is ${box.width}×${box.height}`);
    }
    return problems;
  });
}

describe.runIf(hasPrograms("chromium"))(
  "rendered messages, approval cards and charts in headless Chromium",
  () => {
    it("webchat: the model's Markdown answer is rendered (code block, list, link) and its script is text", async () => {
      magpie.llm!.script(reply.text(MARKDOWN_ANSWER));
      const { context, page } = await signedIn("desktop");
      await page.click("nav >> text=Chat");
      await page.fill("textarea[name=text]", "Why did last night's backup fail?");
      await page.click("#chat-send button");
      const answer = page.locator(".chat-magpie .md", { hasText: "disk is full" });
      await answer.waitFor({ timeout: 15_000 });
      expect(await answer.locator("pre code.language-bash").textContent()).toBe(
        "sudo journalctl --vacuum-size=200M\ndf -h /srv/backup\n",
      );
      expect(await answer.locator("strong").textContent()).toBe("full");
      expect(await answer.locator("li").count()).toBe(2);
      expect(await answer.locator("a").getAttribute("href")).toBe("https://restic.readthedocs.io/");
      expect(await answer.locator("script").count()).toBe(0);
      expect(await answer.textContent()).toContain("<script>alert('not run')</script>");
      expect(await layoutProblems(page)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      await page.screenshot({ path: shot("chat-markdown", "desktop") });

      const phone = await signedIn("phone");
      await phone.page.click("nav >> text=Chat");
      await scrollTo(phone.page.locator(".chat-magpie .md pre"));
      expect(await layoutProblems(phone.page)).toEqual([]);
      expect(await axeViolations(phone.page)).toEqual([]);
      await phone.page.screenshot({ path: shot("chat-markdown", "phone") });
      await phone.context.close();
      await context.close();
    }, 60_000);

    it("webchat: a turn's approval is a card (tool, exact action, risk, who asked, countdown) and is approved from it", async () => {
      magpie.llm!.script(
        reply.toolCalls([{ name: "shell", arguments: { command: "echo 'restarted <mosquitto>'" } }]),
        reply.text("Restarted: `restarted <mosquitto>`"),
      );
      const { context, page } = await signedIn("desktop");
      await page.click("nav >> text=Chat");
      await page.fill("textarea[name=text]", "Restart mosquitto please");
      await page.click("#chat-send button");
      const card = page.locator(".chat-magpie .approval-card");
      await card.waitFor({ timeout: 15_000 });
      expect(await card.locator("h3 code").textContent()).toBe("shell");
      expect(await card.locator("pre code").textContent()).toContain(
        `"command":"echo 'restarted <mosquitto>'"`,
      );
      expect(await card.locator("[data-risk]").textContent()).toBe("high risk");
      expect(await card.locator("dd").first().textContent()).toBe("dashboard (web:dashboard)");
      const timeLeft = card.locator("[data-left-ms]");
      expect(await card.locator("[data-expires]").textContent()).toMatch(/^expires \d\d:\d\d \(in \d+ min/);
      // The countdown ticks in the browser.
      const first = await timeLeft.textContent();
      await expect.poll(() => timeLeft.textContent(), { timeout: 5_000 }).not.toBe(first);
      expect(await timeLeft.textContent()).toMatch(/^in 9 min \d\d s$/);
      expect(await layoutProblems(page)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      await scrollTo(card);
      await page.screenshot({ path: shot("approval-card", "desktop") });

      // Without JavaScript the card still says when it expires, and its buttons are plain forms.
      const still = await signedIn("desktop", { javaScriptEnabled: false });
      await still.page.goto(`${magpie.url}/ui/approvals`);
      const plainCard = still.page.locator(".approval-card").first();
      expect(await plainCard.locator("[data-expires]").textContent()).toMatch(
        /^expires \d\d:\d\d \(in (9|10) min\.?\); no answer means deny$/,
      );
      expect(await plainCard.locator("form[method=post] button.primary").count()).toBe(1);
      await still.context.close();

      const phone = await signedIn("phone");
      await phone.page.click("nav >> text=Chat");
      const phoneCard = phone.page.locator(".chat-magpie .approval-card");
      await scrollTo(phoneCard);
      expect(await layoutProblems(phone.page)).toEqual([]);
      expect(await axeViolations(phone.page)).toEqual([]);
      await phone.page.screenshot({ path: shot("approval-card", "phone") });
      // Approved from the card on the phone: the command runs and the model answers.
      await phoneCard.locator("button:has-text('Approve')").tap();
      await phone.page
        .locator(".chat-magpie .md", { hasText: "Restarted: restarted <mosquitto>" })
        .waitFor({ timeout: 20_000 });
      expect(await phone.page.locator(".approval-card [data-status]").first().textContent()).toMatch(
        /^Approved by/,
      );
      const toolResult = magpie.llm!.requests.at(-1)!.messages.find((message) => message.role === "tool");
      expect(String(toolResult?.content)).toContain("restarted <mosquitto>");
      magpie.llm!.assertDone();
      await phone.context.close();
      await context.close();
    }, 90_000);

    it("usage: tokens per day by model for 30 days and the cost, with a table; desktop and phone", async () => {
      for (const size of ["desktop", "phone"] as const) {
        const { context, page } = await signedIn(size);
        await page.click("nav >> text=Usage");
        const chart = page.locator("#usage-tokens");
        await chart.waitFor();
        expect(await chart.locator("g[data-day]").count()).toBe(30);
        expect(await chart.locator(".chart-legend li").allTextContents()).toEqual(
          expect.arrayContaining([
            expect.stringContaining("gpt-4o-mini"),
            expect.stringContaining("claude-3-5-haiku"),
          ]),
        );
        expect(await page.locator("#usage-cost g[data-day]").count()).toBe(30);
        expect(await page.locator(".chart-total").textContent()).toMatch(/tokens · \$\d+\.\d\d/);
        expect(await layoutProblems(page)).toEqual([]);
        expect(await axeViolations(page)).toEqual([]);
        await page.screenshot({ path: shot("usage-chart", size) });
        await context.close();
      }
    }, 60_000);

    it("cron: each job's last 14 days as a strip of ok / failed / missed / skipped squares; desktop and phone", async () => {
      for (const size of ["desktop", "phone"] as const) {
        const { context, page } = await signedIn(size);
        await page.click("nav >> text=Cron");
        const backup = page.locator("[data-strip='nightly-backup'] g[data-day]");
        await backup.first().waitFor();
        expect(await backup.count()).toBe(14);
        const states = await backup.evaluateAll((cells) =>
          cells.map((cell) => cell.getAttribute("data-state")),
        );
        expect(states.filter((state) => state === "failed")).toHaveLength(1);
        expect(states.filter((state) => state === "missed")).toHaveLength(1);
        expect(states.filter((state) => state === "ran")).toHaveLength(11);
        expect(await page.locator("[data-strip='morning-brief'] g[data-state='skipped']").count()).toBe(1);
        expect(
          await page.locator("[data-strip='disk-check'] g[data-state='failed'] title").textContent(),
        ).toMatch(/: 5 ok, 1 failed$/);
        expect(await layoutProblems(page)).toEqual([]);
        expect(await axeViolations(page)).toEqual([]);
        await scrollTo(page.locator("#cron-strips-title"));
        await page.screenshot({ path: shot("cron-strip", size) });
        await context.close();
      }
    }, 60_000);
  },
);
