import type { MagpieConfig } from "../../config/schema.js";
import { SafeHttpClient } from "../../security/safe-http.js";
import type { ToolContext } from "../context.js";

/** One client per loaded config, carrying its `security.ssrf.allowHosts`. */
const clients = new WeakMap<MagpieConfig, SafeHttpClient>();

/** The SSRF-safe client web tools use: `services.safeHttp` when a feature or test provides one. */
export function safeHttpOf(context: ToolContext): SafeHttpClient {
  const provided = context.services.safeHttp;
  if (provided) return provided;
  let client = clients.get(context.config);
  if (!client) {
    client = new SafeHttpClient({ allowHosts: context.config.security.ssrf.allowHosts });
    clients.set(context.config, client);
  }
  return client;
}
