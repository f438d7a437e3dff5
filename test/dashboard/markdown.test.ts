import { load } from "cheerio";
import { describe, expect, it } from "vitest";
import { MARKDOWN_LIMIT, MarkdownBudget, renderMarkdown, SHOWN_LIMIT } from "../../src/dashboard/markdown.js";
import { hostileInputs, LINEAR_BOUND_MS, MB, timed } from "../helpers/hostile-inputs.js";

const render = (text: string, budget?: MarkdownBudget) => String(renderMarkdown(text, budget));

describe("Markdown in the dashboard", () => {
  it("renders what a model writes: a fenced code block with its language, lists, emphasis, line breaks", () => {
    const $ = load(
      render("Run this:\n\n```bash\nls -la | grep '<x>'\n```\n\n- **one**\n- `two`\n\nline one\nline two"),
      null,
      false,
    );
    const code = $("pre > code.language-bash");
    expect(code.text()).toBe("ls -la | grep '<x>'\n");
    expect($("ul > li").length).toBe(2);
    expect($("li strong").text()).toBe("one");
    expect($("li code").text()).toBe("two");
    // A chat's single line breaks are kept.
    expect($("p br").length).toBe(1);
  });

  it("past MARKDOWN_LIMIT characters the rest shows as plain text, and past SHOWN_LIMIT it is counted, not shown", () => {
    const head = `**bold**\n${"x".repeat(MARKDOWN_LIMIT)}\n`;
    const tail = "**not bold**\n".repeat(30_000);
    const $ = load(render(head + tail), null, false);
    expect($("strong").length).toBe(1);
    expect($("pre.md-plain").text()).toContain("**not bold**");
    const shown = $("pre.md-plain").text().length;
    expect(shown).toBeLessThanOrEqual(SHOWN_LIMIT);
    expect($("p.md-cut").text()).toMatch(/^\([\d,]+ more characters not shown\)$/);
  });

  it("a page's budget goes to the texts it renders first; past it a text shows plain until another page renders it", () => {
    const budget = new MarkdownBudget(150);
    const first = `**first** ${"a".repeat(100)} ${Math.random()}`;
    const second = `**second** ${"b".repeat(100)} ${Math.random()}`;
    expect(render(first, budget)).toContain("<strong>first</strong>");
    expect(render(second, budget)).not.toContain("<strong>");
    expect(render(second, budget)).toContain("**second**");
    // Rendered once (with a fresh budget), it comes from the cache without spending any.
    expect(render(second, new MarkdownBudget())).toContain("<strong>second</strong>");
    const spent = new MarkdownBudget(0);
    expect(render(second, spent)).toContain("<strong>second</strong>");
  });

  it("1 MB hostile texts render in bounded time and come out escaped", () => {
    for (const [name, text] of Object.entries(hostileInputs(MB))) {
      let rendered = "";
      const ms = timed(() => {
        rendered = render(`${text}<script>`);
      });
      expect(ms, name).toBeLessThan(LINEAR_BOUND_MS);
      expect(rendered, name).not.toContain("<script>");
      expect(rendered, name).toMatch(/more characters not shown/);
    }
  }, 60_000);

  it("a page of 200 hostile messages parses no more than its budget", () => {
    const budget = new MarkdownBudget();
    const messages = Array.from({ length: 200 }, (_, index) => `${index} ${"[![".repeat(7_000)}`);
    const ms = timed(() => {
      for (const message of messages) render(message, budget);
    });
    expect(budget.remaining).toBeLessThan(MARKDOWN_LIMIT);
    expect(ms).toBeLessThan(LINEAR_BOUND_MS * 2);
  }, 30_000);
});
