/**
 * Well-known credential formats, redacted even when they were never configured (a token printed by `cat` of some
 * config file, an Authorization header echoed back). Each is specific enough that ordinary text doesn't match.
 */
export const SECRET_PATTERNS: ReadonlyArray<{ name: string; pattern: RegExp; keepPrefix?: boolean }> = [
  { name: "OpenAI/Anthropic-style key", pattern: /\bsk-[A-Za-z0-9_-]{20,}/g },
  { name: "GitHub token", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/g },
  { name: "Slack token", pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g },
  { name: "AWS access key id", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: "Google API key", pattern: /\bAIza[0-9A-Za-z_-]{35}/g },
  { name: "Telegram bot token", pattern: /\b\d{6,12}:AA[A-Za-z0-9_-]{30,}/g },
  {
    name: "Authorization header value",
    pattern: /(\bauthorization["']?\s*[:=]\s*["']?(?:Bearer|Basic|Token|Bot)\s+)[^\s"',;]+/gi,
    keepPrefix: true,
  },
];

const KEY_BEGIN = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/g;
const KEY_END = /-----END [A-Z0-9 ]*PRIVATE KEY-----/g;

/**
 * Replaces each private key block, BEGIN line to the first END line after it. Found in code, not by one regex:
 * `BEGIN[\s\S]*?END` scans to the end of the text from every BEGIN that has no END, quadratic in their count.
 */
function redactPrivateKeyBlocks(text: string, replacement: string): string {
  const parts: string[] = [];
  let copied = 0;
  KEY_BEGIN.lastIndex = 0;
  for (let begin = KEY_BEGIN.exec(text); begin; begin = KEY_BEGIN.exec(text)) {
    KEY_END.lastIndex = KEY_BEGIN.lastIndex;
    // No END after this BEGIN means none after any later BEGIN either.
    if (!KEY_END.exec(text)) break;
    parts.push(text.slice(copied, begin.index), replacement);
    copied = KEY_END.lastIndex;
    KEY_BEGIN.lastIndex = copied;
  }
  if (parts.length === 0) return text;
  parts.push(text.slice(copied));
  return parts.join("");
}

/** Replaces every well-known credential format in `text` with `replacement`. */
export function redactSecretPatterns(text: string, replacement: string): string {
  let result = redactPrivateKeyBlocks(text, replacement);
  for (const { pattern, keepPrefix } of SECRET_PATTERNS) {
    result = keepPrefix
      ? result.replace(pattern, (_match, prefix: string) => `${prefix}${replacement}`)
      : result.replace(pattern, replacement);
  }
  return result;
}
