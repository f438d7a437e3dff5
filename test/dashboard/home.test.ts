import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { schedulerFeature } from "../../src/app/scheduler-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { traceFeature } from "../../src/app/trace-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const TOKEN = "home-test-token-0123456789";
const headers = { authorization: `Bearer ${TOKEN}` };
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;
let magpie: TestApp;

beforeAll(async () => {
  magpie = await startTestApp({
    features: [securityFeature, schedulerFeature, usageFeature, traceFeature, dashboardFeature],
    config: {
      timezone: "Europe/Berlin",
      http: { dashboard: { enabled: true, token: TOKEN } },
      llm: { fallbacks: [{ model: "backup-model" }], prices: { "test-model": { input: 1, output: 2 } } },
      budgets: { daily: { tokens: 200 }, perChat: { tokens: 50, usd: 1 } },
    },
  });
}, 30_000);
afterAll(() => magpie.stop());

const home = async (path = "/") => {
  const response = await fetch(`${magpie.url}${path}`, { headers });
  expect(response.status, path).toBe(200);
  return response.text();
};
const post = (path: string, form: Record<string, string> = {}) =>
  fetch(`${magpie.url}${path}`, { method: "POST", headers, body: new URLSearchParams(form) });

async function send(text: string): Promise<number> {
  const channel = magpie.channel!;
  const before = channel.sent.length;
  const accepted = await channel.receive(text);
  if (accepted.status !== "accepted") throw new Error(`not accepted: ${accepted.status}`);
  await channel.waitForSent(before + 1);
  return accepted.inboxId;
}

describe("the home page", () => {
  it("shows the running app: version, uptime, model chain, sandbox, channels, queue, RSS and database size", async () => {
    const llm = magpie.llm!;
    llm.script(reply.text("Hello from the primary"));
    await send("hello");
    let page = await home();
    expect(page).toContain("<title>Home · Magpie</title>");
    expect(page).toContain('<a href="/" aria-current="page">Home</a>');
    expect(page).toMatch(new RegExp(`data-fact="version">${VERSION.replaceAll(".", "\\.")}<`));
    expect(page).toMatch(/data-fact="uptime">\d+(\.\d)? (ms|s)/);
    expect(page).toContain("<b>test-model</b> → backup-model");
    expect(page).toContain('data-model-state="primary"');
    expect(page).toMatch(/data-fact="sandbox">.*(on|OFF)/s);
    expect(page).toMatch(/data-fact="rss">\d+(\.\d)? MB RSS/);
    expect(page).toMatch(/data-fact="database">\d+(\.\d)? (KB|MB)/);
    expect(page).toMatch(
      /data-channel="test">\s*<b>test<\/b> <span class="badge connected">connected<\/span>/,
    );
    expect(page).toContain('data-fact="inbox-waiting">0<');
    expect(page).toContain('data-fact="outbox">0 to deliver');

    // The primary fails and the fallback answers; then both fail and the message's outcome is failed.
    llm.script(reply.error(503, "primary down"), reply.text("Hello from the backup"));
    await send("again");
    expect(await home()).toContain('data-model-state="fallback"');
    llm.script(reply.error(503, "primary down"), reply.error(503, "backup down"));
    const failed = await send("<script>alert(1)</script> is the model up?");
    page = await home();
    expect(page).toContain('data-model-state="failed"');
    expect(page).toContain(`data-failed-message="${failed}"`);
    expect(page).toContain(`<a href="/ui/trace/${failed}"`);
    expect(page).toContain("&lt;script&gt;alert(1)&lt;/script&gt; is the model up?");
    expect(page).not.toContain("<script>alert(1)</script>");
    llm.assertDone();
  });

  it("shows today's spend against each budget, from the usage ledger", async () => {
    const page = await home();
    // Two calls answered (20 tokens each at the fake; a failed call costs nothing): 40 tokens, one chat.
    const ledger = magpie.app.store.db
      .prepare("SELECT SUM(prompt_tokens + completion_tokens) AS tokens, COUNT(*) AS calls FROM llm_usage")
      .get() as { tokens: number; calls: number };
    expect(ledger.tokens).toBe(40);
    expect(page).toContain(`data-fact="spend-total">${ledger.calls} LLM calls · 40 tokens`);
    expect(page).toMatch(/data-budget="daily">\s*<b>Daily budget<\/b> <span class="">20%<\/span>/);
    expect(page).toContain("40 of 200 tokens");
    // perChat: the fullest chat is at 40 of 50 tokens (80%, a warning).
    expect(page).toMatch(/data-budget="perChat">\s*<b>Per chat budget<\/b> <span class="warn">80%<\/span>/);
    expect(page).toContain("— fullest: test:chat-1");
    expect(page).toContain('aria-label="Per chat budget: 80% used"');
  });

  it("shows the next cron runs and the last failed one, with times in the configured zone", async () => {
    const scheduler = magpie.app.context.services.scheduler!;
    scheduler.add({ name: "nightly-report", expression: "0 3 * * *", message: "good night" });
    const broken = scheduler.add({ name: "broken-backup", expression: "0 4 * * *", command: "exit 3" });
    const run = await scheduler.runNow(broken.id);
    expect(run.status).toBe("error");
    const page = await home();
    expect(page).toMatch(
      // 03:00 in Berlin is 02:00 UTC in winter (GMT+1) and 01:00 UTC in summer (GMT+2): whichever the next run is.
      /data-next-run="nightly-report"><b>nightly-report<\/b> <time datetime="[^"]+(T02:00:00.000Z" title="\d{4}-\d\d-\d\d 03:00:00 GMT\+1|T01:00:00.000Z" title="\d{4}-\d\d-\d\d 03:00:00 GMT\+2)">/,
    );
    expect(page).toContain(`data-problem-run="${run.id}"`);
    expect(page).toMatch(/<b>broken-backup<\/b> <span class="badge bad">failed \(error\)<\/span>/);
  });

  it("lists pending approvals and owner questions with buttons that decide them", async () => {
    const gate = magpie.app.context.services.approvals!;
    const decision = gate.request({
      sessionKey: "test:1",
      target: { channel: "test", chatId: "1" },
      approver: { channel: "test", userId: "1", role: "owner" },
      tool: "shell",
      action: "rm -rf <b>build</b>/",
      reason: "risk:high",
      timeoutMs: 60_000,
    });
    const answer = magpie.app.context.services.questions!.ask({
      sessionKey: "test:1",
      target: { channel: "test", chatId: "1" },
      askedOf: { channel: "test", userId: "1", role: "owner" },
      prompt: "Deploy to <i>prod</i>?",
      options: [
        { id: "yes", label: "Yes" },
        { id: "no", label: "No" },
      ],
      allowCustom: true,
      timeoutMs: 60_000,
    });
    const page = await home();
    const id = gate.repository.recent(1)[0]!.id;
    expect(page).toContain(`data-approval="${id}"`);
    expect(page).toContain("rm -rf &lt;b&gt;build&lt;/b&gt;/");
    expect(page).toContain(`hx-post="/ui/approvals/${id}/approve" hx-target="#home-notice"`);
    expect(page).toContain("Deploy to &lt;i&gt;prod&lt;/i&gt;?");
    expect(page).toMatch(/<span class="badge warn">2<\/span>/);
    const question = /data-question="([a-z0-9]+)"/.exec(page)![1]!;

    const approved = await post(`/ui/approvals/${id}/approve`);
    expect(approved.status).toBe(200);
    expect(await decision).toBe("approved");
    expect((await post(`/ui/questions/${question}/answer`, { option: "0" })).status).toBe(200);
    expect(await answer).toEqual({ answer: "Yes", option_id: "yes" });
    const after = await home("/ui/home");
    expect(after).not.toContain(`data-approval="${id}"`);
    expect(after).toContain("No approvals or questions are waiting.");
    // The live part alone (htmx) carries no page shell.
    const part = await (
      await fetch(`${magpie.url}/ui/home`, { headers: { ...headers, "hx-request": "true" } })
    ).text();
    expect(part.startsWith('<div id="home"')).toBe(true);
  });
});
