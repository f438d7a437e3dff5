import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { renderMarkdown } from "../../channels/format/markdown.js";
import { renderMatrixHtml } from "../../channels/matrix.js";
import { approvalCard, decisionButton } from "../../src/dashboard/approval-card.js";
import type { ApprovalRecord } from "../../src/security/approval-store.js";
import { approvalPromptText, codeBlock, codeSpan } from "../../src/security/approval-text.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { waitFor } from "../fakes/http-util.js";
import { reply } from "../fakes/openai.js";
import { hostileInputs, LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";
import { startTelegramApp, type TelegramApp } from "../helpers/telegram-app.js";

/**
 * What the owner reads in an approval prompt is exactly what runs (DESIGN.md → Security → Approvals): the tool
 * name and the action are code in every channel's dialect, so `mcp__tickets__post_comment` is not rendered as
 * "mcp<b>tickets</b>post_comment", and an action can't close its code block and go on as formatted text.
 */

const TOOL = "mcp__tickets__post_comment";
const OWNER = { id: 611, first_name: "Alice" };

/** What a Telegram client shows for an HTML message: the text without tags, entities decoded. */
const visibleText = (html: string) =>
  html
    .replace(/<[^>]*>/g, "")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&amp;", "&");

let running: TelegramApp | null = null;
afterEach(async () => {
  await running?.stop();
  running = null;
});

describe("approval prompt on Telegram (grammY against the Bot API fake)", () => {
  it("shows the MCP tool name as code, intact, and the action as a code block", async () => {
    running = await startTelegramApp({
      access: { allowFrom: [OWNER.id] },
      config: { security: { approvals: { require: [TOOL], timeoutSecs: 30 } } },
    });
    const { telegram, testApp } = running;
    let posted = 0;
    testApp.app.tools.register(
      defineTool({
        name: TOOL,
        description: "Post a comment on a ticket.",
        inputSchema: z.object({ issue: z.number(), body: z.string() }),
        risk: "medium",
        execute: () => {
          posted++;
          return "posted";
        },
      }),
    );
    testApp.llm!.script(
      reply.toolCalls([{ name: TOOL, arguments: { issue: 42, body: "LGTM __ship__ it" } }]),
      reply.text("Not posted."),
    );
    telegram.pushMessage({ chat: { id: OWNER.id, type: "private" }, from: OWNER, text: "comment on 42" });
    const prompt = await waitFor(
      () =>
        telegram
          .callsOf("sendMessage")
          .find((call) => !call.failed && String(call.body.text).includes("Approval needed")),
      "the approval prompt",
    );
    const html = String(prompt.body.text);
    expect(prompt.body.parse_mode).toBe("HTML");
    expect(html).toContain(`Tool: <code>${TOOL}</code>`);
    expect(html).toContain(`<pre>${TOOL} {"issue":42,"body":"LGTM __ship__ it"}</pre>`);
    const shown = visibleText(html);
    expect(shown).toContain(`Tool: ${TOOL}\n`);
    expect(shown).toContain(`${TOOL} {"issue":42,"body":"LGTM __ship__ it"}`);
    expect(html).not.toMatch(/<[bi]>/);

    const keyboard = (
      prompt.body.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }
    ).inline_keyboard;
    telegram.pushUpdate({
      callback_query: {
        id: "cb-deny",
        from: { ...OWNER, is_bot: false },
        chat_instance: "ci",
        data: keyboard[0]![1]!.callback_data,
        message: { message_id: 9, date: 0, chat: { id: OWNER.id, type: "private" }, text: "prompt" },
      },
    });
    await waitFor(() => telegram.sentTexts().includes("Not posted."), "the turn's end");
    testApp.llm!.assertDone();
    expect(posted).toBe(0);
  });
});

describe("approval prompt text in every dialect", () => {
  // An action that tries to close its code block and show its own "all clear" as formatted text.
  const action = `${TOOL} {"body":"x\n\`\`\`\n**Approved by the owner already** _safe_\n\`\`\`"}`;
  const text = approvalPromptText({
    id: "1a2b3c4d",
    reason: "risk:medium",
    tool: TOOL,
    action,
    timeoutSecs: 300,
  });

  it("Telegram HTML, Matrix HTML and e-mail HTML: the tool in <code>, the whole action in one <pre>", () => {
    for (const html of [renderMarkdown(text, "telegram-html"), renderMatrixHtml(text)]) {
      expect(html).toContain(`Tool: <code>${TOOL}</code>`);
      expect(html.match(/<pre>/g)).toHaveLength(1);
      const block = /<pre>([\s\S]*)<\/pre>/.exec(html)![1]!;
      expect(block).toContain("**Approved by the owner already** _safe_");
      expect(html).not.toMatch(/<[bi]>/);
    }
  });

  it("Slack mrkdwn and Discord Markdown: the tool as inline code, one fenced block with no fence inside", () => {
    for (const dialect of ["slack-mrkdwn", "discord"] as const) {
      const rendered = renderMarkdown(text, dialect);
      expect(rendered).toContain(`Tool: \`${TOOL}\``);
      // Exactly the opening and the closing fence: the action's own backticks can't end the block early.
      expect(rendered.split("```")).toHaveLength(3);
      expect(rendered).toContain("⟦U+0060⟧⟦U+0060⟧⟦U+0060⟧\n**Approved by the owner already**");
    }
  });

  it("a backtick or a line break in a tool name can't break out of its code span", () => {
    expect(codeSpan("mcp__x__a`**b**`")).toBe("`mcp__x__a⟦U+0060⟧**b**⟦U+0060⟧`");
    expect(codeSpan("a\nb")).toBe("`a⟦U+000A⟧b`");
    expect(renderMarkdown(`Tool: ${codeSpan("mcp__x__a`**b**`")}`, "telegram-html")).toBe(
      "Tool: <code>mcp__x__a⟦U+0060⟧**b**⟦U+0060⟧</code>",
    );
  });

  it.each(Object.entries(hostileInputs()))(
    "stays linear on %s as an action and a tool name",
    (_name, input) => {
      expect(timed(() => codeBlock(input))).toBeLessThan(LINEAR_BOUND_MS);
      expect(timed(() => codeSpan(input))).toBeLessThan(LINEAR_BOUND_MS);
    },
  );

  it("the dashboard card shows the tool as code with invisible characters made visible", async () => {
    const record: ApprovalRecord = {
      id: "1a2b3c4d",
      sessionKey: "telegram:611",
      channel: "telegram",
      chatId: "611",
      tool: "mcp__tickets__post\u200Bcomment",
      action: "mcp__tickets__post_comment {}",
      reason: "risk:medium",
      status: "pending",
      requestedAt: 0,
      expiresAt: 60_000,
      decidedAt: null,
      decidedBy: null,
    };
    const card = String(
      await approvalCard({ record, askedBy: null, timezone: "UTC", now: 1_000 }, decisionButton),
    );
    expect(card).toContain("<code>mcp__tickets__post⟦U+200B⟧comment</code>");
    expect(card).toContain('<pre class="approval-action"><code>mcp__tickets__post_comment {}</code></pre>');
  });
});
