import { load } from "cheerio";
import markdownIt from "markdown-it";
import { describe, expect, it } from "vitest";
import { isAllowedLink, renderMarkdown } from "../../src/dashboard/markdown.js";

/**
 * Markdown from the model is outside text: rendered in the owner's signed-in browser, a script in it would act as
 * the owner (approve, run cron jobs, read memory). Each attack below is checked on the HTML a browser would get.
 */
const ATTACKS: Record<string, string> = {
  "javascript: link": "[x](javascript:alert(1))",
  "JAVASCRIPT: in capitals": "[x](JAVASCRIPT:alert(1))",
  "javascript: with an entity": "[x](java&#x73;cript:alert(1))",
  "javascript: with a decimal entity and a colon entity": "[x](javascript&#58;alert(1))",
  "javascript: reference link": "[x][evil]\n\n[evil]: javascript:alert(1)",
  "javascript: autolink": "<javascript:alert(1)>",
  "vbscript: link": "[x](vbscript:msgbox(1))",
  "data: HTML link": "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
  "data: image": "![x](data:image/png;base64,iVBORw0KGgo=)",
  "data: SVG image": "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
  "file: link": "[passwd](file:///etc/passwd)",
  "image with onerror": "![x](x onerror=alert(1))",
  "image with onerror in an angle-bracket target": "![x](<x onerror=alert(1)>)",
  "image with a quote-breaking title": '![x](x "a\\" onerror=\\"alert(1)")',
  "remote image (leaks the owner's address)": "![pixel](https://tracker.example/p.png)",
  "<img onerror>": "<img src=x onerror=alert(1)>",
  "<script>": "<script>alert(1)</script>",
  "inline HTML in a paragraph": "hello <b onmouseover=alert(1)>there</b>",
  "raw HTML block": '<div onclick="alert(1)">\n\n**inside**\n\n</div>',
  "<svg onload>": "<svg onload=alert(1)>",
  "<iframe>": '<iframe src="javascript:alert(1)"></iframe>',
  "<style> block": "<style>body{background:url(https://tracker.example/p)}</style>",
  "HTML comment hiding a script": "<!-- x --><script>alert(1)</script>",
  "fence info string breaking out": '```"><script>alert(1)</script>\ncode\n```',
};

/**
 * Harmless even to a markdown-it without our rules (so not in the "dangerous without the rules" check), kept
 * because other renderers get them wrong: a space ends a link target, and markdown-it escapes a fence's info.
 */
const HARMLESS_TO_ANY_MARKDOWN_IT = new Set(["image with onerror", "fence info string breaking out"]);

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);
const ACTIVE_ELEMENTS =
  /^(script|img|svg|iframe|object|embed|style|link|meta|base|form|input|video|audio|source)$/;

/** What in `renderedHtml` could run a script or fetch something when the page is shown: empty when nothing. */
function dangers(renderedHtml: string): string[] {
  const found: string[] = [];
  const $ = load(renderedHtml, null, false);
  $("*").each((_, element) => {
    // domhandler types <script> and <style> apart from other tags.
    if (element.type !== "tag" && element.type !== "script" && element.type !== "style") return;
    if (ACTIVE_ELEMENTS.test(element.name)) found.push(`<${element.name}>`);
    for (const [name, value] of Object.entries(element.attribs)) {
      if (/^on/i.test(name) || name === "style" || name === "srcdoc") found.push(`${name}=`);
      if (name === "href" || name === "src" || name === "action" || name === "formaction") {
        // As the browser resolves it, relative to the dashboard.
        const url = new URL(value, "http://dashboard.invalid/ui/chat");
        if (!SAFE_SCHEMES.has(url.protocol)) found.push(`${name}=${url.protocol}`);
      }
    }
  });
  return found;
}

describe("Markdown in the dashboard: nothing from the model runs or loads", () => {
  it.each(Object.entries(ATTACKS))("%s", (_name, attack) => {
    const rendered = String(renderMarkdown(attack));
    expect(dangers(rendered), rendered).toEqual([]);
  });

  const dangerousElsewhere = Object.entries(ATTACKS).filter(
    ([name]) => !HARMLESS_TO_ANY_MARKDOWN_IT.has(name),
  );
  it.each(dangerousElsewhere)("%s is dangerous in a Markdown renderer without the rules", (_name, attack) => {
    // The same parser with raw HTML on, every link target allowed and images as <img>: the check above isn't
    // vacuous — each attack gets through there.
    const unsafe = new markdownIt({ html: true, linkify: true });
    unsafe.validateLink = () => true;
    expect(dangers(unsafe.render(attack))).not.toEqual([]);
  });

  it("text stays text: tags and entities from the model are shown, not interpreted", () => {
    const rendered = String(renderMarkdown('<b>bold?</b> & "quotes" `<i>code</i>`'));
    const $ = load(rendered, null, false);
    expect($("b, i").length).toBe(0);
    expect($.text()).toContain('<b>bold?</b> & "quotes" <i>code</i>');
  });

  it("an image is a link to it, never an <img>; a refused link keeps its text only", () => {
    const $ = load(
      String(renderMarkdown("![a cat](https://example.com/cat.png) and [x](javascript:alert(1))")),
      null,
      false,
    );
    expect($("img").length).toBe(0);
    const link = $("a.md-image");
    expect(link.attr("href")).toBe("https://example.com/cat.png");
    expect(link.text()).toBe("[image: a cat]");
    expect(link.attr("rel")).toContain("noreferrer");
    expect($("a").length).toBe(1);
    expect($.text()).toContain("[x](javascript:alert(1))");
  });

  it("good links work: https, http, mailto, relative, autolinks and bare e-mail addresses", () => {
    const $ = load(
      String(
        renderMarkdown(
          "[a](https://example.com/a) [b](http://example.com/b) [c](mailto:me@example.com) [d](/ui/cron) <https://example.com/e> f@example.com",
        ),
      ),
      null,
      false,
    );
    expect(
      $("a")
        .map((_, link) => $(link).attr("href"))
        .get(),
    ).toEqual([
      "https://example.com/a",
      "http://example.com/b",
      "mailto:me@example.com",
      "/ui/cron",
      "https://example.com/e",
      "mailto:f@example.com",
    ]);
    expect(
      $("a")
        .map((_, link) => $(link).attr("rel"))
        .get()
        .every((rel) => rel.includes("noopener")),
    ).toBe(true);
  });

  it("isAllowedLink reads a target as a browser would", () => {
    for (const refused of [
      "javascript:alert(1)",
      "JavaScript:alert(1)",
      "java\tscript:alert(1)",
      "java\nscript:alert(1)",
      " javascript:alert(1)",
      "\u0001javascript:alert(1)",
      "data:text/html,x",
      "vbscript:x",
      "file:///etc/passwd",
      "tel:123",
      "x:y",
    ]) {
      expect(isAllowedLink(refused), JSON.stringify(refused)).toBe(false);
    }
    for (const allowed of [
      "https://example.com",
      "HTTP://example.com",
      "mailto:a@example.com",
      "/ui/cron",
      "./a:b",
      "?q=a:b",
      "#top",
      "page",
    ]) {
      expect(isAllowedLink(allowed), allowed).toBe(true);
    }
  });
});
