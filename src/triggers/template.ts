import type { TriggerEvent } from "./trigger.js";

/** The longest text a template renders to (a chat message, not a dump of the payload). */
const MAX_TEXT = 4_000;
/** Placeholders may name at most this long a path. */
const MAX_PATH = 200;

/**
 * Fills `{{event.payload.temperature}}`-style placeholders from the event, with no LLM and no code: a dotted
 * path into `event`; objects render as JSON, a missing value as nothing. Scans with indexOf (linear in the
 * template) and cuts the result at 4,000 characters.
 */
export function renderTemplate(template: string, event: TriggerEvent): string {
  let text = "";
  let from = 0;
  while (from < template.length) {
    const open = template.indexOf("{{", from);
    if (open < 0) break;
    const close = template.indexOf("}}", open + 2);
    if (close < 0) break;
    text += template.slice(from, open);
    const path = template.slice(open + 2, close).trim();
    text += path.length <= MAX_PATH ? valueText(lookup({ event }, path)) : template.slice(open, close + 2);
    from = close + 2;
    if (text.length > MAX_TEXT) break;
  }
  if (from < template.length) text += template.slice(from);
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}

function lookup(root: unknown, path: string): unknown {
  let value = root;
  for (const key of path.split(".")) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function valueText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(value) ?? "";
  return String(value);
}
