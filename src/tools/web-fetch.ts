import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import { safeHttpOf } from "./web/safe-http-of.js";

/** Raw bytes read from a page before extraction. */
const MAX_PAGE_BYTES = 5 * 1024 * 1024;

export const webFetchTool = defineTool({
  name: "web_fetch",
  description:
    "Fetch a public web page (GET) and return it as readable text: title, headings, links, lists and code; scripts and styles dropped. Private and local addresses are refused.",
  inputSchema: z.object({
    url: z.string().min(1).describe("http:// or https:// URL."),
    max_chars: z
      .number()
      .int()
      .min(100)
      .max(500_000)
      .optional()
      .describe("Maximum characters returned. Default 50,000 (tools.web.maxChars)."),
  }),
  risk: "low",
  readOnly: true,
  async execute(input, context) {
    const settings = context.config.tools.web;
    refuseOutboundLeak(context, [{ kind: "url", value: input.url }]);
    const response = await safeHttpOf(context).request({
      url: input.url,
      method: "GET",
      headers: {
        accept: "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
        "user-agent": "Magpie/0.1 (+web_fetch)",
      },
      maxResponseBytes: MAX_PAGE_BYTES,
      timeoutMs: context.config.tools.http.timeoutMs,
      allowedDomains: settings.allowedDomains,
      signal: context.signal,
    });
    if (response.status >= 400) {
      throw new ToolError(
        "web.http_error",
        `${response.finalUrl} answered HTTP ${response.status}. Check the URL or try another source.`,
      );
    }
    const contentType = response.headers["content-type"] ?? "";
    const raw = response.body.toString("utf8");
    let title = "";
    let text: string;
    if (
      /html|xml/i.test(contentType) ||
      (!contentType && /<html|<body|<!doctype html/i.test(raw.slice(0, 2000)))
    ) {
      const { htmlToReadable } = await import("./web/html-to-text.js");
      ({ title, text } = htmlToReadable(raw, response.finalUrl));
    } else if (/^text\/|json|javascript|csv|yaml/i.test(contentType) || !contentType) {
      text = raw;
    } else {
      return `${response.finalUrl} is ${contentType} (${response.body.length} bytes${response.truncated ? "+" : ""}), not a text page; nothing to show.`;
    }
    const maxChars = input.max_chars ?? settings.maxChars;
    const cut = text.length > maxChars;
    const header = [title ? `# ${title}` : null, `URL: ${response.finalUrl}`].filter(Boolean).join("\n");
    const note = cut
      ? `\n\n[truncated: showing ${maxChars} of ${text.length} characters; pass a larger max_chars for more]`
      : "";
    return `${header}\n\n${cut ? text.slice(0, maxChars) : text}${note}`;
  },
});
