import { load } from "cheerio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import {
  approvalCard,
  askerOf,
  dashboardDecisionButtons,
  riskOf,
} from "../../src/dashboard/approval-card.js";
import type { ApprovalRecord } from "../../src/security/approval-store.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const TOKEN = "approval-card-token-0123456789";
let magpie: TestApp;

beforeAll(async () => {
  magpie = await startTestApp({
    llm: false,
    features: [securityFeature, dashboardFeature],
    config: { timezone: "Europe/Berlin", http: { dashboard: { enabled: true, token: TOKEN } } },
  });
});
afterAll(() => magpie.stop());

const HOSTILE = "</code></pre><script>alert(1)</script><img src=x onerror=alert(2)>";

describe("approval card", () => {
  it("who asked is the chat's last sender before the request; the card escapes the action, the tool and the name", async () => {
    await magpie.channel!.receive("/status", { chatId: "77", userId: "77", userName: `Mallory ${HOSTILE}` });
    const gate = magpie.app.context.services.approvals!;
    const controller = new AbortController();
    const decision = gate.request({
      sessionKey: "test:77",
      target: { channel: "test", chatId: "77" },
      approver: { channel: "test", userId: "77", role: "owner" },
      tool: "shell",
      action: `shell {"command":"${HOSTILE}"}`,
      reason: "risk:medium",
      timeoutMs: 240_000,
      signal: controller.signal,
    });
    const record = gate.repository.recent(1)[0]!;
    const askedBy = askerOf(magpie.app.store.db, record);
    expect(askedBy).toBe(`Mallory ${HOSTILE} (test:77)`);

    const card = String(
      await approvalCard(
        { record, askedBy, timezone: "Europe/Berlin", now: record.requestedAt + 60_000 },
        dashboardDecisionButtons(record.id),
      ),
    );
    const $ = load(card, null, false);
    expect($("img")).toHaveLength(0);
    // Only the card's own countdown script.
    expect(
      $("script")
        .map((_, script) => $(script).attr("src"))
        .get(),
    ).toEqual(["/ui/assets/countdown.js"]);
    expect($("pre code").text()).toBe(`shell {"command":"${HOSTILE}"}`);
    expect($("dd").first().text()).toBe(`Mallory ${HOSTILE} (test:77)`);
    expect($("[data-risk]").text()).toBe("medium risk");
    expect($("[data-left-ms]").attr("data-left-ms")).toBe("180000");
    expect($("[data-expires]").text()).toMatch(/^expires \d\d:\d\d \(in 3 min\.?\); no answer means deny$/);
    expect($("form[action$='/approve'] button.primary").attr("aria-label")).toBe(
      `Approve shell (${record.id})`,
    );
    expect($("form[action$='/deny'] button.danger")).toHaveLength(1);

    // A card the clock has run out on offers no buttons.
    const late = load(
      String(
        await approvalCard(
          { record, askedBy, timezone: "Europe/Berlin", now: record.expiresAt + 1 },
          dashboardDecisionButtons(record.id),
        ),
      ),
      null,
      false,
    );
    expect(late("button")).toHaveLength(0);
    controller.abort();
    expect(await decision).toBe("denied");
  });

  it("a decided card shows the decision and who made it, without buttons; a job's request has no asker", async () => {
    const record: ApprovalRecord = {
      id: "a1b2c3d4",
      sessionKey: "cron:3:9",
      channel: "test",
      chatId: "1",
      tool: "gpio",
      action: "gpio write 17 1",
      reason: "guard:warn",
      status: "approved",
      requestedAt: Date.UTC(2026, 10, 25, 10, 0),
      expiresAt: Date.UTC(2026, 10, 25, 10, 5),
      decidedAt: Date.UTC(2026, 10, 25, 10, 1),
      decidedBy: "dashboard",
    };
    expect(askerOf(magpie.app.store.db, record)).toBeNull();
    const $ = load(
      String(
        await approvalCard(
          { record, askedBy: null, timezone: "Europe/Berlin", now: Date.UTC(2026, 10, 25, 10, 2) },
          dashboardDecisionButtons(record.id),
        ),
      ),
      null,
      false,
    );
    expect($("button")).toHaveLength(0);
    expect($("[data-status='approved']").text()).toMatch(/^Approved by dashboard/);
    expect($("[data-risk]").text()).toBe("guard:warn");
    expect(riskOf("risk:high")).toEqual({ label: "high risk", tone: "bad" });
  });

  it("the home page's variant posts to the approvals route and picks the notice out of the answer", async () => {
    const button = dashboardDecisionButtons("a1b2c3d4", {
      target: "#home-notice",
      select: "[role=status]",
      swap: "innerHTML",
    });
    const record = { id: "a1b2c3d4", tool: "shell" } as ApprovalRecord;
    const $ = load(String(await button("deny", "Deny", record)), null, false);
    expect($("form").attr("hx-post")).toBe("/ui/approvals/a1b2c3d4/deny");
    expect($("form").attr("hx-target")).toBe("#home-notice");
    expect($("form").attr("hx-select")).toBe("[role=status]");
    expect($("form").attr("hx-swap")).toBe("innerHTML");
  });
});
