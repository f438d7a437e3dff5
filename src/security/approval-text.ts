import { revealInvisible } from "../lib/reveal-invisible.js";

/**
 * The text of an approval prompt (DESIGN.md → Security → Approvals: what the owner reads is what runs). It goes out
 * as Markdown, which every channel renders in its own dialect (Telegram and Matrix HTML, Slack mrkdwn, Discord,
 * e-mail), so the tool name and the action are code — a code span and a code block — and nothing in them is read
 * as markup: `mcp__tickets__post_comment` must not turn into "mcp**tickets**post_comment".
 */
export function approvalPromptText(prompt: {
  id: string;
  reason: string;
  tool: string;
  /** Redacted, with invisible characters shown already. */
  action: string;
  timeoutSecs: number;
}): string {
  const { id, reason, tool, action, timeoutSecs } = prompt;
  return [
    `Approval needed (${reason}) — request ${id}`,
    `Tool: ${codeSpan(revealInvisible(tool))}`,
    "Action:",
    codeBlock(action),
    `Approve or deny within ${timeoutSecs} s (no answer = deny), or reply /approve ${id} or /deny ${id}.`,
  ].join("\n");
}

const BACKTICK_SHOWN = "⟦U+0060⟧";

/**
 * One line of text as a Markdown code span. The renderers (ours for Telegram, Slack and e-mail; Discord's own) end a
 * span at the next backtick or line break, so those are shown as `⟦U+XXXX⟧` — the notation the prompt already uses
 * for invisible characters.
 */
export function codeSpan(text: string): string {
  return `\`${text.replaceAll("`", BACKTICK_SHOWN).replaceAll("\n", "⟦U+000A⟧")}\``;
}

/**
 * Text as a fenced Markdown code block. Discord and Slack close a block at any three backticks, even mid-line, and
 * ours at a line of them, so every run of three or more backticks is shown as `⟦U+0060⟧`s.
 */
export function codeBlock(text: string): string {
  const shown = text.replace(/`{3,}/g, (run) => BACKTICK_SHOWN.repeat(run.length));
  return `\`\`\`\n${shown}\n\`\`\``;
}
