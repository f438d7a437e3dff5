import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../../../channels/format/markdown.js";

describe("renderMarkdown", () => {
  it("Telegram HTML: escapes every <, > and & outside markup", () => {
    expect(renderMarkdown("<script>alert(1)</script> & <b>", "telegram-html")).toBe(
      "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;",
    );
  });

  it("Telegram HTML: bold, italic, strike, links, headings, lists, quotes", () => {
    const markdown = '# Title\n**b** *i* _j_ ~~s~~ [x](https://e.test/?a=1&b="2")\n- item\n> quoted <';
    expect(renderMarkdown(markdown, "telegram-html")).toBe(
      '<b>Title</b>\n<b>b</b> <i>i</i> <i>j</i> <s>s</s> <a href="https://e.test/?a=1&amp;b=&quot;2&quot;">x</a>\n• item\n<blockquote>quoted &lt;</blockquote>',
    );
  });

  it("Telegram HTML: code is escaped and never parsed as markup", () => {
    expect(renderMarkdown("`**not bold** <x>`", "telegram-html")).toBe("<code>**not bold** &lt;x&gt;</code>");
    expect(renderMarkdown("```\na **b** <c>\n```", "telegram-html")).toBe("<pre>a **b** &lt;c&gt;</pre>");
  });

  it("leaves snake_case and arithmetic alone", () => {
    expect(renderMarkdown("call my_var_name with 2*3*4", "telegram-html")).toBe(
      "call my_var_name with 2*3*4",
    );
  });

  it("Slack mrkdwn: bold, italic, strike, links and escaping", () => {
    expect(renderMarkdown("**b** *i* ~~s~~ [docs](https://x.test) a<b", "slack-mrkdwn")).toBe(
      "*b* _i_ ~s~ <https://x.test|docs> a&lt;b",
    );
    expect(renderMarkdown("```ts\nconst a = 1 < 2;\n```", "slack-mrkdwn")).toBe(
      "```\nconst a = 1 &lt; 2;\n```",
    );
  });

  it("Discord keeps Markdown as written", () => {
    const markdown = "**b** _i_ `c`\n```js\nx\n```";
    expect(renderMarkdown(markdown, "discord")).toBe(markdown);
  });

  it("an unclosed fence still renders its code", () => {
    expect(renderMarkdown("```\nopen <", "telegram-html")).toBe("<pre>open &lt;</pre>");
  });
});
