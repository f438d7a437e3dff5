import { describe, expect, it } from "vitest";
import { chunkMarkdown, renderParts } from "../../../channels/format/chunk.js";
import { renderMarkdown } from "../../../channels/format/markdown.js";

describe("chunkMarkdown", () => {
  it("keeps a short text whole", () => {
    expect(chunkMarkdown("hello", 100)).toEqual(["hello"]);
  });

  it("prefers paragraph, then line, then word boundaries", () => {
    const paragraphs = `${"a".repeat(60)}\n\n${"b".repeat(60)}`;
    expect(chunkMarkdown(paragraphs, 100)).toEqual(["a".repeat(60), "b".repeat(60)]);
    const lines = `${"a".repeat(60)}\n${"b".repeat(60)}`;
    expect(chunkMarkdown(lines, 100)).toEqual(["a".repeat(60), "b".repeat(60)]);
    const words = `${"word ".repeat(30).trim()}`;
    const parts = chunkMarkdown(words, 64);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(64);
      expect(part.startsWith(" ") || part.endsWith(" ")).toBe(false);
      expect(part.split(" ").every((word) => word === "word")).toBe(true);
    }
    expect(parts.join(" ")).toBe(words);
  });

  it("hard-cuts a single overlong word", () => {
    const parts = chunkMarkdown("x".repeat(250), 100);
    expect(parts.every((part) => part.length <= 100)).toBe(true);
    expect(parts.join("")).toBe("x".repeat(250));
  });

  it("closes and reopens a fenced code block it has to split", () => {
    const code = Array.from({ length: 40 }, (_, index) => `line ${index}`).join("\n");
    const parts = chunkMarkdown(`Intro\n\n\`\`\`python\n${code}\n\`\`\`\nafter`, 120);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(120);
      const fences = part.split("\n").filter((line) => line.startsWith("```")).length;
      expect(fences % 2).toBe(0);
    }
    expect(parts.slice(1, -1).every((part) => part.startsWith("```python"))).toBe(true);
    const lines = parts
      .join("\n")
      .split("\n")
      .filter((line) => line.startsWith("line "));
    expect(lines).toEqual(code.split("\n"));
  });
});

describe("renderParts", () => {
  it("splits again when escaping makes a part too long", () => {
    const text = "<".repeat(3000);
    const parts = renderParts(text, 4096, (markdown) => renderMarkdown(markdown, "telegram-html"));
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(part.formatted.length).toBeLessThanOrEqual(4096);
    expect(parts.map((part) => part.plain).join("")).toBe(text);
  });
});
