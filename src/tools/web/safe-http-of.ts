import { SafeHttpClient } from "../../security/safe-http.js";
import type { ToolContext } from "../context.js";

const defaultClient = new SafeHttpClient();

/** The SSRF-safe client web tools use: `services.safeHttp` when a feature or test provides one. */
export function safeHttpOf(context: ToolContext): SafeHttpClient {
  const provided = context.services.safeHttp;
  return provided instanceof SafeHttpClient ? provided : defaultClient;
}
