import { afterEach, describe, expect, it } from "vitest";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { traceFeature } from "../../src/app/trace-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { reply } from "../fakes/openai.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const TOKEN = "trace-dashboard-token-0123456789";
const headers = { authorization: `Bearer ${TOKEN}` };
let harness: TestApp | undefined;
afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

describe("the dashboard's trace page", () => {
  it("is linked from each message of a session and shows what magpie trace shows", async () => {
    harness = await startTestApp({
      features: [usageFeature, traceFeature, dashboardFeature],
      config: { http: { dashboard: { enabled: true, token: TOKEN } } },
    });
    const { llm, channel, url, app } = harness;
    llm!.script(reply.error(503, "upstream down"));
    const accepted = await channel!.receive("is the model up?");
    const inboxId = accepted.status === "accepted" ? accepted.inboxId : -1;
    await channel!.waitForSent(1);
    await app.outbox.flush(2_000);

    const session = await (await fetch(`${url}/ui/sessions/test%3Achat-1`, { headers })).text();
    expect(session).toContain(`<a href="/ui/trace/${inboxId}">trace</a>`);
    expect(session).toContain("failed (llm.");

    const response = await fetch(`${url}/ui/trace/${inboxId}`, { headers });
    expect(response.status).toBe(200);
    const page = await response.text();
    expect(page).toContain('data-outcome="failed"');
    expect(page).toContain(`turn inbox:${inboxId} · user · agent main · error`);
    expect(page).toMatch(/llm chat test-model · 0\+0 tokens · \d+ ms · failed/);
    expect((await fetch(`${url}/ui/trace/99999`, { headers })).status).toBe(404);
    expect((await fetch(`${url}/ui/trace/${inboxId}`)).status).toBe(401);
  });
});
