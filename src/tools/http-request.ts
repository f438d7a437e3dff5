import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import { safeHttpOf } from "./web/safe-http-of.js";

const BINARY_PREVIEW_BYTES = 64;

export const httpRequestTool = defineTool({
  name: "http_request",
  description:
    "Send an HTTP request to a public API (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS) with optional headers and body. Returns status, headers and body (cut at the response size cap). Private and local addresses are refused.",
  inputSchema: z.object({
    url: z.string().min(1).describe("http:// or https:// URL."),
    method: z
      .enum(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
      .optional()
      .describe("Default GET."),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('Request headers, e.g. {"content-type": "application/json"}.'),
    body: z.string().optional().describe("Request body (send JSON as a string)."),
  }),
  risk: "high",
  // GET, HEAD and OPTIONS only read (RFC 9110 safe methods); the rest may change something.
  readOnlyFor: (input) => ["GET", "HEAD", "OPTIONS"].includes(input.method ?? "GET"),
  isEnabled: (config) => config.tools.http.enabled,
  async execute(input, context) {
    const settings = context.config.tools.http;
    refuseOutboundLeak(context, [
      { kind: "url", value: input.url },
      { kind: "headers", value: input.headers },
      { kind: "body", value: input.body },
    ]);
    const response = await safeHttpOf(context).request({
      url: input.url,
      method: input.method ?? "GET",
      headers: input.headers,
      body: input.body,
      maxResponseBytes: settings.maxResponseBytes,
      timeoutMs: settings.timeoutMs,
      allowedDomains: settings.allowedDomains,
      signal: context.signal,
    });
    const contentType = response.headers["content-type"] ?? "";
    const isText =
      !contentType || /^text\/|json|xml|javascript|x-www-form-urlencoded|yaml|csv/i.test(contentType);
    return {
      status: response.status,
      url: response.finalUrl,
      ...(response.redirects.length ? { redirects: response.redirects } : {}),
      headers: response.headers,
      body: isText
        ? response.body.toString("utf8")
        : `[${contentType} body, ${response.body.length} bytes; first bytes base64: ${response.body.subarray(0, BINARY_PREVIEW_BYTES).toString("base64")}]`,
      ...(response.truncated
        ? { truncated: `body cut at ${settings.maxResponseBytes} bytes (tools.http.maxResponseBytes)` }
        : {}),
    };
  },
});
