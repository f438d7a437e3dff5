import { BrowserService } from "../browser/browser-service.js";
import type { MagpieConfig } from "../config/schema.js";
import type { ToolContext } from "./context.js";
import { safeHttpOf } from "./web/safe-http-of.js";

/** One service per loaded config when no feature provided one (tests that build only a registry). */
const services = new WeakMap<MagpieConfig, BrowserService>();

/** The browser service: `services.browser` (the browser feature's), else one built from config. */
export function browserOf(context: ToolContext): BrowserService {
  const provided = context.services.browser;
  if (provided) return provided;
  let service = services.get(context.config);
  if (!service) {
    service = new BrowserService({ config: context.config.browser, guard: safeHttpOf(context) });
    services.set(context.config, service);
  }
  return service;
}
