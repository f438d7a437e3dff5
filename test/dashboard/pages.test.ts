import { load } from "cheerio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WebChannel } from "../../channels/web.js";
import { dashboardFeature } from "../../src/app/dashboard-feature.js";
import { memoryFeature } from "../../src/app/memory-feature.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { usageFeature } from "../../src/app/usage-feature.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";

const TOKEN = "pages-test-token-0123456789";
const headers = { authorization: `Bearer ${TOKEN}` };
let magpie: TestApp;

beforeAll(async () => {
  magpie = await startTestApp({
    llm: false,
    features: [securityFeature, memoryFeature, usageFeature, dashboardFeature],
    config: { http: { dashboard: { enabled: true, token: TOKEN } } },
  });
});
afterAll(() => magpie.stop());

const get = async (path: string) => {
  const response = await fetch(`${magpie.url}${path}`, { headers });
  expect(response.status, path).toBe(200);
  return response.text();
};
const post = (path: string, form: Record<string, string>) =>
  fetch(`${magpie.url}${path}`, { method: "POST", headers, body: new URLSearchParams(form) });

describe("dashboard pages", () => {
  it("memory: add, edit, search and forget; a chat's /memory sees the edit", async () => {
    expect((await post("/ui/memory/save", { key: "coffee", content: "Owner drinks espresso" })).status).toBe(
      200,
    );
    expect(await get("/ui/memory")).toContain("Owner drinks espresso");
    await post("/ui/memory/save", { key: "coffee", content: "Owner drinks flat white" });
    await magpie.channel!.receive("/memory");
    const [reply] = await magpie.channel!.waitForSent(1);
    expect(reply!.message.text).toContain("flat white");
    expect(await get("/ui/memory?q=flat")).toContain('data-memory="coffee"');
    expect(await get("/ui/memory?q=nothing-like-this")).not.toContain("data-memory=");
    expect(await (await post("/ui/memory/forget", { key: "coffee" })).text()).toContain("Forgot coffee");
    expect(await get("/ui/memory")).not.toContain("flat white");
  });

  it("a question asked of an owner is answered from the dashboard", async () => {
    const questions = magpie.app.context.services.questions!;
    const answer = questions.ask({
      sessionKey: "test:1",
      target: { channel: "test", chatId: "1" },
      askedOf: { channel: "test", userId: "1", role: "owner" },
      prompt: "Which branch?",
      options: [
        { id: "main", label: "main" },
        { id: "dev", label: "dev" },
      ],
      allowCustom: false,
      timeoutMs: 60_000,
    });
    const page = await get("/ui/approvals");
    expect(page).toContain("Which branch?");
    const id = /data-question="([a-z0-9]+)"/.exec(page)![1]!;
    expect((await post(`/ui/questions/${id}/answer`, { text: "free text" })).status).toBe(409);
    expect((await post(`/ui/questions/${id}/answer`, { option: "1" })).status).toBe(200);
    expect(await answer).toEqual({ answer: "dev", option_id: "dev" });
  });

  it("a question asked of a guest can't be answered from the dashboard", async () => {
    const questions = magpie.app.context.services.questions!;
    const controller = new AbortController();
    const answer = questions.ask({
      sessionKey: "test:2",
      target: { channel: "test", chatId: "2" },
      askedOf: { channel: "test", userId: "2", role: "guest" },
      prompt: "Guest question",
      options: [],
      allowCustom: true,
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    expect(await get("/ui/approvals")).not.toContain("Guest question");
    const id = questions.pending()[0]!.id;
    expect((await post(`/ui/questions/${id}/answer`, { text: "owner says" })).status).toBe(409);
    controller.abort();
    expect((await answer).answer).toBeNull();
  });

  it("sessions list and history; usage totals", async () => {
    magpie.app.store.history.ensureSession("test:9", "main");
    magpie.app.store.history.append("test:9", [
      { message: { role: "user", content: "what is <b>bold</b>?" }, tokens: 5 },
      { message: { role: "assistant", content: "Escaped, I hope." }, tokens: 4 },
    ]);
    expect(await get("/ui/sessions")).toContain('href="/ui/sessions/test%3A9"');
    const history = await get("/ui/sessions/test%3A9");
    expect(history).toContain("what is &lt;b&gt;bold&lt;/b&gt;?");
    expect(history).toContain("Escaped, I hope.");
    expect(await get("/ui/usage")).toContain("Last 30 days");
  });

  it("stored XSS: hostile Markdown from the model in a session's history and the webchat is shown, not run", async () => {
    const hostile = [
      "[a](javascript:alert(1)) [b](JAVASCRIPT:alert(1)) [c](java&#x73;cript:alert(1)) <javascript:alert(1)>",
      "![x](x onerror=alert(1)) ![y](https://tracker.example/p.png) [d](data:text/html;base64,PHNjcmlwdD4=)",
      "<img src=x onerror=alert(1)> <svg onload=alert(1)> <script>alert(1)</script>",
      '<div onclick="alert(1)">',
      "",
      "raw block",
      "",
      "</div>",
    ].join("\n");
    magpie.app.store.history.ensureSession("test:xss", "main");
    magpie.app.store.history.append("test:xss", [
      { message: { role: "user", content: "<script>alert('user')</script>" }, tokens: 1 },
      { message: { role: "assistant", content: hostile }, tokens: 1 },
    ]);
    const web = magpie.app.adapters.get("web") as WebChannel;
    await web.send({ channel: "web", chatId: "dashboard" }, { text: hostile });
    for (const page of [await get("/ui/sessions/test%3Axss"), await get("/ui/chat/lines")]) {
      const $ = load(page);
      const rendered = $(".md").filter((_, element) => $(element).text().includes("raw block"));
      expect(rendered).toHaveLength(1);
      expect(rendered.find("script, img, svg, iframe, [onclick], [onerror], [onload]")).toHaveLength(0);
      const hrefs = rendered
        .find("a")
        .map((_, link) => $(link).attr("href"))
        .get();
      expect(hrefs).toEqual(["https://tracker.example/p.png"]);
      expect(rendered.text()).toContain("<script>alert(1)</script>");
      expect(page).not.toContain("<script>alert");
    }
  });
});
