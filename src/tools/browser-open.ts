import { z } from "zod";
import { findProgram, requireDesktop } from "../browser/desktop.js";
import { normalizeHostname } from "../security/ssrf-address.js";
import { defineTool, ToolError } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";

const OPEN_TIMEOUT_MS = 15_000;

/** The program that hands a URL to the desktop's default browser on this platform. */
function openerName(): string {
  return process.platform === "darwin" ? "open" : "xdg-open";
}

/** The URL if it is HTTPS on one of `allowedDomains` (the host itself or a subdomain), else a ToolError. */
export function allowedBrowserUrl(rawUrl: string, allowedDomains: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new ToolError("browser_open.invalid_url", `'${rawUrl}' is not a valid absolute URL (https://…).`);
  }
  if (url.protocol !== "https:")
    throw new ToolError(
      "browser_open.https_only",
      `browser_open opens only https URLs, not ${url.protocol}. Use https://${url.host}${url.pathname}.`,
    );
  if (url.username || url.password)
    throw new ToolError("browser_open.credentials_in_url", "URLs with user:password@ are refused.");
  const host = normalizeHostname(url.hostname);
  const listed = allowedDomains.some((domain) => {
    const normalized = normalizeHostname(domain);
    return host === normalized || host.endsWith(`.${normalized}`);
  });
  if (!listed)
    throw new ToolError(
      "browser_open.domain_not_allowed",
      `${host} is not in browser.allowedDomains (${allowedDomains.join(", ") || "empty"}). Ask the owner to add it.`,
    );
  return url;
}

export const browserOpenTool = defineTool({
  name: "browser_open",
  description:
    "Open an https URL in the desktop's own browser (for the person at this machine to see), with xdg-open or open. Only hosts on the owner's allow list (browser.allowedDomains) and their subdomains. Nothing is read back; use `browser` or `web_fetch` to read a page.",
  inputSchema: z.object({
    url: z.string().min(1).describe("The https URL to open, e.g. https://github.com/notifications."),
  }),
  risk: "medium",
  isEnabled: (config) => config.browser.allowedDomains.length > 0,
  async execute(input, context) {
    const url = allowedBrowserUrl(input.url, context.config.browser.allowedDomains);
    refuseOutboundLeak(context, [{ kind: "url", value: input.url }]);
    requireDesktop("browser_open");
    const name = openerName();
    const opener = findProgram([name]);
    if (!opener)
      throw new ToolError(
        "browser_open.no_opener",
        `${name} is not on the PATH, so there is no way to open the desktop's browser${name === "xdg-open" ? " (sudo apt install xdg-utils)" : ""}.`,
      );
    const { execa } = await import("execa");
    const result = await execa(opener, [url.href], {
      reject: false,
      stdin: "ignore",
      timeout: OPEN_TIMEOUT_MS,
    });
    if (result.failed)
      throw new ToolError(
        "browser_open.failed",
        `${name} could not open ${url.href}: ${(result.stderr || result.shortMessage || "").toString().trim().split("\n")[0]}`,
      );
    return { ok: true, opened: url.href, with: name };
  },
});
