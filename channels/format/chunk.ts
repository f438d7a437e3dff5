/**
 * Splits a long Markdown reply into parts of at most `limit` characters: on paragraph, then line, then word
 * boundaries, and never leaves a fenced code block open — a part that ends inside one closes it, and the
 * next part reopens it with the same language.
 */

import { fenceOf } from "./fence.js";

const CLOSE_RESERVE = 4; // "\n```"

/** The fence still open at the end of `text` (its opening line), or null. */
function openFenceAt(text: string): { marker: string; opener: string } | null {
  let open: { marker: string; opener: string } | null = null;
  for (const line of text.split("\n")) {
    const fence = fenceOf(line);
    if (!fence) continue;
    if (open === null) open = { marker: fence.marker, opener: line.trim() };
    else if (fence.marker === open.marker && fence.language === "") open = null;
  }
  return open;
}

/** The best place to cut `text` at or before `max`: paragraph > line > word > hard cut. */
function cutPoint(text: string, max: number): number {
  const window = text.slice(0, max + 1);
  const floor = Math.floor(max * 0.3);
  for (const separator of ["\n\n", "\n", " "]) {
    const at = window.lastIndexOf(separator);
    if (at > floor) return at;
  }
  return max;
}

/** Splits `text` into parts no longer than `limit`, preferring natural boundaries. */
export function chunkMarkdown(text: string, limit: number): string[] {
  if (limit < 32) throw new RangeError(`chunk limit ${limit} is too small`);
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const cut = cutPoint(rest, limit - CLOSE_RESERVE);
    let part = rest.slice(0, cut).trimEnd();
    let next = rest.slice(cut).replace(/^[ \t]*\n?/, "");
    if (cut > 0 && rest[cut] === "\n") next = rest.slice(cut + 1);
    const fence = openFenceAt(part);
    if (fence) {
      part = `${part}\n${fence.marker}`;
      next = `${fence.opener}\n${next}`;
    } else {
      next = next.replace(/^\n+/, "");
    }
    if (next.length >= rest.length) {
      // A reopened fence ate all progress (absurdly small limit): hard-cut instead.
      parts.push(rest.slice(0, limit));
      rest = rest.slice(limit);
      continue;
    }
    if (part.trim().length > 0) parts.push(part);
    rest = next;
  }
  if (rest.trim().length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

/** One part ready to send: `formatted` in the platform dialect, `plain` as the fallback. */
export interface RenderedPart {
  formatted: string;
  plain: string;
}

/**
 * Chunks the Markdown and renders every part; a part whose rendering outgrows the limit (escaping adds
 * characters) is split again with a smaller budget.
 */
export function renderParts(
  markdown: string,
  limit: number,
  render: (markdown: string) => string,
): RenderedPart[] {
  const out: RenderedPart[] = [];
  for (const part of chunkMarkdown(markdown, limit)) {
    const formatted = render(part);
    if (formatted.length <= limit) {
      out.push({ formatted, plain: part });
      continue;
    }
    const smaller = Math.max(200, Math.floor((limit * limit) / formatted.length) - 16);
    if (smaller >= part.length) {
      out.push({ formatted: formatted.slice(0, limit), plain: part });
      continue;
    }
    out.push(...renderParts(part, smaller, render).map((inner) => inner));
  }
  return out;
}
