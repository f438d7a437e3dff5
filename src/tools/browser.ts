import fs from "node:fs/promises";
import { z } from "zod";
import type { BrowserSession } from "../browser/browser-service.js";
import { REFUSED_HEADER, type RefusedRequest } from "../browser/guarded-proxy.js";
import { errorMessage } from "../lib/errors.js";
import type { ToolContext } from "./context.js";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { requireHighRisk } from "./hardware-support.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import { ensureWorkspace, guardPath } from "./path-guard.js";

/** How long one action (a navigation, a click) may take. */
const ACTION_TIMEOUT_MS = 30_000;

const inputSchema = z.object({
  action: z
    .enum(["open", "screenshot", "click", "type", "scroll", "read"])
    .describe(
      "open: load url. read: the page as readable text. click: the element at selector. type: fill text into selector. scroll: down one screen (text 'up' scrolls up; selector scrolls to that element). screenshot: save a PNG to the workspace (selector: only that element).",
    ),
  url: z.string().min(1).optional().describe("open: the http(s) URL."),
  selector: z
    .string()
    .min(1)
    .optional()
    .describe(
      "click, type (required), scroll, screenshot: a CSS or Playwright selector, e.g. 'text=Sign in'.",
    ),
  text: z.string().optional().describe("type: the text to enter. scroll: 'up' or 'down'."),
});

type BrowserInput = z.output<typeof inputSchema>;

/** What an action tells the model besides its own result: where the page is and what the guard refused. */
async function pageState(session: BrowserSession): Promise<Record<string, unknown>> {
  const title = await session.page.title().catch(() => "");
  return {
    url: session.page.url(),
    ...(title ? { title } : {}),
    ...(session.refused.length ? { refused: refusedSummary(session.refused) } : {}),
  };
}

function refusedSummary(refused: RefusedRequest[]): Array<{ url: string; code: string }> {
  return refused.map(({ url, code }) => ({ url, code }));
}

function requireSelector(input: BrowserInput): string {
  if (!input.selector)
    throw new ToolError("browser.selector_required", `action '${input.action}' needs a selector.`);
  return input.selector;
}

/** Playwright's errors are long call logs: the first line is what the model needs. */
function actionError(error: unknown, action: string): ToolError {
  if (error instanceof ToolError) return error;
  const message = errorMessage(error).split("\n")[0] ?? String(error);
  const timedOut = (error as Error).name === "TimeoutError";
  return new ToolError(
    timedOut ? "browser.timeout" : "browser.action_failed",
    `browser ${action} failed: ${message}`,
  );
}

async function open(session: BrowserSession, context: ToolContext, url: string) {
  // Judged before Chromium sees it, so a refused URL reports the guard's own code and reason.
  await (await import("./web/safe-http-of.js")).safeHttpOf(context).resolveTarget(url);
  let status: number | undefined;
  const notOpened = (refusal: RefusedRequest) =>
    new ToolError(refusal.code, `${url} was not opened: ${refusal.url} was refused (${refusal.reason})`);
  try {
    const response = await session.page.goto(url, { waitUntil: "load", timeout: ACTION_TIMEOUT_MS });
    status = response?.status();
    // A redirect hop the proxy refused: the page holds the proxy's refusal, not the site.
    if (response?.headers()[REFUSED_HEADER]) {
      const finalUrl = response.url();
      throw notOpened(
        session.refused.find((entry) => entry.url === finalUrl) ?? {
          url: finalUrl,
          code: response.headers()[REFUSED_HEADER]!,
          reason: "refused by the SSRF guard",
        },
      );
    }
  } catch (error) {
    if (error instanceof ToolError) throw error;
    const refusal = session.refused[0];
    if (refusal) throw notOpened(refusal);
    throw actionError(error, "open");
  }
  return { ok: true, ...(status !== undefined ? { status } : {}), ...(await pageState(session)) };
}

async function read(session: BrowserSession, context: ToolContext) {
  const html = await session.page.content();
  const { htmlToReadable } = await import("./web/html-to-text.js");
  const { title, text } = htmlToReadable(html, session.page.url());
  const maxChars = context.config.tools.web.maxChars;
  const cut = text.length > maxChars;
  const header = [title ? `# ${title}` : null, `URL: ${session.page.url()}`].filter(Boolean).join("\n");
  const refused = session.refused.length
    ? `\n\n[refused by the SSRF guard: ${session.refused.map((entry) => `${entry.url} (${entry.code})`).join(", ")}]`
    : "";
  const note = cut ? `\n\n[truncated: showing ${maxChars} of ${text.length} characters]` : "";
  return `${header}\n\n${cut ? text.slice(0, maxChars) : text}${note}${refused}`;
}

async function screenshot(session: BrowserSession, context: ToolContext, selector: string | undefined) {
  await ensureWorkspace(context);
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const resolved = await guardPath(context, `screenshots/browser-${stamp}.png`, "write");
  const image = selector
    ? await session.page.locator(selector).first().screenshot({ timeout: ACTION_TIMEOUT_MS })
    : await session.page.screenshot({ timeout: ACTION_TIMEOUT_MS });
  await fs.mkdir((await import("node:path")).dirname(resolved.real), { recursive: true });
  await fs.writeFile(resolved.real, image);
  return {
    ok: true,
    path: displayPath(context, resolved.real),
    bytes: image.length,
    ...(await pageState(session)),
  };
}

async function scroll(session: BrowserSession, input: BrowserInput) {
  if (input.selector) {
    await session.page.locator(input.selector).first().scrollIntoViewIfNeeded({ timeout: ACTION_TIMEOUT_MS });
  } else {
    const direction = input.text?.trim().toLowerCase() === "up" ? -1 : 1;
    // Strings, not functions: they run in the page, and this project compiles without the DOM types.
    await session.page.evaluate(`window.scrollBy(0, ${direction} * window.innerHeight)`);
  }
  const position = (await session.page.evaluate(
    "({ scrollY: Math.round(window.scrollY), scrollHeight: document.documentElement.scrollHeight, viewportHeight: window.innerHeight })",
  )) as { scrollY: number; scrollHeight: number; viewportHeight: number };
  return { ok: true, ...position, ...(await pageState(session)) };
}

/** Waits briefly for what a click or Enter may have started (a navigation, a form post). */
async function settle(session: BrowserSession): Promise<void> {
  await session.page.waitForLoadState("load", { timeout: 5_000 }).catch(() => undefined);
}

export const browserTool = defineTool({
  name: "browser",
  description:
    "Drive a headless browser (one page per chat, kept between calls): open a URL, read the page as text, click, type into fields, scroll, and take screenshots (saved in the workspace; the path is returned). Private and local addresses are refused, also for the page's images, scripts and frames; refused requests are listed in the result. click and type count as high risk (they can submit forms).",
  inputSchema,
  // read/open/scroll/screenshot only look; click and type ask as risk:high below (they can submit forms).
  risk: "medium",
  isEnabled: (config) => config.browser.enabled,
  async execute(input, context) {
    if (input.action === "open" && !input.url)
      throw new ToolError("browser.url_required", "action 'open' needs a url.");
    refuseOutboundLeak(context, [
      { kind: "url", value: input.url },
      { kind: "typed text", value: input.action === "type" ? input.text : undefined },
    ]);
    if (input.action === "click" || input.action === "type") {
      const selector = requireSelector(input);
      if (input.action === "type" && input.text === undefined)
        throw new ToolError("browser.text_required", "action 'type' needs text.");
      const approvals = context.config.security.approvals.require;
      // Asked only when the call as a whole wasn't already (by tool name or risk:medium).
      if (!approvals.includes("browser") && !approvals.includes("risk:medium"))
        await requireHighRisk(context, `browser ${input.action} ${JSON.stringify(selector)}`);
    }
    const { browserOf } = await import("./browser-of.js");
    const service = browserOf(context);
    const session = await service.session(context.sessionKey);
    try {
      switch (input.action) {
        case "open":
          return await open(session, context, input.url!);
        case "read":
          return await read(session, context);
        case "screenshot":
          return await screenshot(session, context, input.selector);
        case "scroll":
          return await scroll(session, input);
        case "click":
          await session.page.locator(requireSelector(input)).first().click({ timeout: ACTION_TIMEOUT_MS });
          await settle(session);
          return { ok: true, ...(await pageState(session)) };
        case "type":
          await session.page
            .locator(requireSelector(input))
            .first()
            .fill(input.text ?? "", { timeout: ACTION_TIMEOUT_MS });
          return { ok: true, ...(await pageState(session)) };
      }
    } catch (error) {
      throw actionError(error, input.action);
    } finally {
      service.touch(context.sessionKey, session);
    }
  },
});
