import { randomBytes } from "node:crypto";

/** About a megabyte: the size every text path must get through in linear time. */
export const MB = 1024 * 1024;

/** `unit` repeated to `size` characters. */
function fill(unit: string, size: number): string {
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

/** Base64 of random bytes, `size` characters long. */
function base64(size: number): string {
  return randomBytes(Math.ceil((size * 3) / 4))
    .toString("base64")
    .slice(0, size);
}

/**
 * Inputs built to make a backtracking regex or a naive parser go quadratic, each about `size` characters: one
 * long word with no line break anywhere near it, encoded blobs, unclosed Markdown markers, a URL, many lines.
 */
export function hostileInputs(size = MB): Record<string, string> {
  const word = "a".repeat(size);
  return {
    "one word, no newline": word,
    "one word, then a newline": `${word}\n`,
    "a newline, then one word": `\n${word}`,
    "one word, then a space and a newline": `${word} \n`,
    "base64, one line": base64(size),
    "base64, wrapped at 76": (base64(size).match(/.{1,76}/g) ?? []).join("\n"),
    "nested Markdown markers *_~": fill("*_~", size),
    "backtick run": fill("`", size),
    "unclosed link brackets": fill("[", size),
    "link brackets and parentheses": fill("[](", size),
    "a 1 MB URL": `https://example.com/${fill("a/b?c=", size - 20)}`,
    "100,000 short lines": fill("ab\n", 100_000 * 3),
    "blank lines": fill("\n", size),
    spaces: fill(" ", size),
    "private key headers without an end": fill("-----BEGIN RSA PRIVATE KEY-----\n", size),
    "authorization headers without a value": fill("authorization: Bearer ", size),
    "key prefixes": fill("sk-ghp_xoxb-AKIA", size),
    "html-ish tags": fill("<a <b", size),
    "quotes and braces": fill('{"a":[', size),
    "tool-call markers": fill('<tool_call>{"name":"', size),
  };
}

/** Milliseconds `run` takes. */
export function timed(run: () => unknown): number {
  const started = performance.now();
  run();
  return performance.now() - started;
}

/** The bound a 1 MB input must finish in: generous against noise, far below what quadratic work takes. */
export const LINEAR_BOUND_MS = 2000;
