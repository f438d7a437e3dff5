import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chunkMarkdown, renderParts } from "../../channels/format/chunk.js";
import { fenceOf } from "../../channels/format/fence.js";
import { type Dialect, renderMarkdown } from "../../channels/format/markdown.js";
import { renderForTerminal } from "../../channels/format/terminal.js";
import { estimateMessageTokens, recentWithinBudget } from "../../src/core/compaction.js";
import { parseTextToolCalls } from "../../src/core/text-tool-calls.js";
import { revealInvisible } from "../../src/lib/reveal-invisible.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import { checkShellPolicy } from "../../src/security/shell-policy.js";
import type { StoredMessage } from "../../src/store/history.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { GREP_TIME_LIMIT_MS } from "../../src/tools/file-grep.js";
import { builtinTools } from "../../src/tools/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { SpillStore } from "../../src/tools/spill.js";
import { htmlToReadable } from "../../src/tools/web/html-to-text.js";
import { ownerCallContext } from "../helpers/call-context.js";
import { startTestApp, type TestApp } from "../helpers/harness.js";
import { hostileInputs, LINEAR_BOUND_MS, MB } from "../helpers/hostile-inputs.js";
import { createToolHarness, errorCode, type ToolHarness } from "../tools/tool-harness.js";

/**
 * Attack: one long input must not freeze the bot, on any path a text takes after redaction (input-size.test.ts):
 * Markdown rendering and chunking for every channel, inbound message → history → LLM request, tool output →
 * redaction → spill, fetched HTML, the shell parser, the path guard, text tool calls, JSON repair, the approval
 * prompt. Each gets hostile megabytes and must finish inside a bound linear work meets with room to spare.
 * And the model's own regex (file_grep) can't stall the loop at all: RE2 in a worker with a time limit.
 */

/**
 * CPU milliseconds `run` takes (this test process's, GC threads included): on a runner shared with other test
 * files the wall clock can stretch several times over, while the work done stays what it is.
 */
function timed(run: () => unknown): number {
  const before = process.cpuUsage();
  run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const inputs = hostileInputs();
const cases = Object.entries(inputs);

/** Per-channel Markdown dialects and the message limits the adapters chunk at. */
const CHANNELS: Array<{ name: string; dialect: Dialect; limit: number }> = [
  { name: "Telegram HTML", dialect: "telegram-html", limit: 4096 },
  { name: "Discord", dialect: "discord", limit: 2000 },
  { name: "Slack mrkdwn", dialect: "slack-mrkdwn", limit: 40_000 },
  { name: "Slack section", dialect: "slack-mrkdwn", limit: 3000 },
  { name: "plain", dialect: "plain", limit: 4096 },
];

/** `text` without fence lines and whitespace: what chunking must keep, whatever it adds or trims at cuts. */
function content(text: string): string {
  return text
    .split("\n")
    .filter((line) => !fenceOf(line))
    .join("")
    .replace(/\s+/g, "");
}

/** A megabyte of prose, lists and code blocks, one of them far longer than any channel's limit. */
function mixedDocument(): string {
  const pieces: string[] = [];
  let size = 0;
  for (let index = 0; size < MB; index++) {
    const piece =
      index % 7 === 3
        ? `\`\`\`ts\n${"const value = compute(value) * 2; // step\n".repeat(index % 21 === 3 ? 2500 : 20)}\`\`\`\n`
        : `## Part ${index}\n\nSome **bold** and _italic_ text with \`code\` and a [link](https://example.com/${index}).\n- item one\n- item two\n\n`;
    pieces.push(piece);
    size += piece.length;
  }
  return pieces.join("");
}

describe("input size: Markdown rendering and chunking per channel", () => {
  it.each(cases)("renders %s in every dialect and the terminal in linear time", (_name, text) => {
    for (const { dialect } of CHANNELS) {
      expect(
        timed(() => renderMarkdown(text, dialect)),
        dialect,
      ).toBeLessThan(LINEAR_BOUND_MS);
    }
    expect(timed(() => renderForTerminal(text, { color: true }))).toBeLessThan(LINEAR_BOUND_MS);
  });

  it.each(cases)("chunks %s at each channel's limit in linear time, losing nothing", (_name, text) => {
    for (const { name, dialect, limit } of CHANNELS) {
      let parts: string[] = [];
      expect(
        timed(() => (parts = chunkMarkdown(text, limit))),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
      expect(Math.max(...parts.map((part) => part.length)), name).toBeLessThanOrEqual(limit);
      expect(content(parts.join("\n")), name).toBe(content(text));
      expect(
        timed(() => renderParts(text, limit, (part) => renderMarkdown(part, dialect))),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
    }
  });

  it("chunks a megabyte of prose and code blocks without breaking a block, and the parts reassemble", () => {
    const text = mixedDocument();
    for (const { name, limit } of CHANNELS) {
      let parts: string[] = [];
      expect(
        timed(() => (parts = chunkMarkdown(text, limit))),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
      for (const part of parts) {
        expect(part.length, name).toBeLessThanOrEqual(limit);
        // Every part opens and closes its own blocks: an even number of fence lines.
        const fences = part.split("\n").filter((line) => fenceOf(line)).length;
        expect(fences % 2, `${name}: ${part.slice(0, 80)}`).toBe(0);
      }
      expect(content(parts.join("\n")), name).toBe(content(text));
    }
  });
});

describe("input size: inbound message → history → LLM request", () => {
  let test: TestApp;

  beforeAll(async () => {
    // The limit is raised past the inputs so the whole megabyte reaches history and the request builder.
    test = await startTestApp({ config: { agent: { maxInboundChars: 2 * MB, historyTokens: 8_000 } } });
  });
  afterAll(() => test.stop());

  it("answers each hostile megabyte within a bound, with the whole text in the model's request", async () => {
    const names = [
      "one word, no newline",
      "base64, wrapped at 76",
      "nested Markdown markers *_~",
      "a 1 MB URL",
    ];
    names.push("100,000 short lines");
    for (const [index, name] of names.entries()) {
      const text = inputs[name]!;
      test.llm!.script({ kind: "text", text: `answer ${index}` });
      const started = performance.now();
      await test.channel!.receive(text);
      await test.channel!.waitForSent(index + 1, 30_000);
      expect(performance.now() - started, name).toBeLessThan(LINEAR_BOUND_MS * 2);
      const request = JSON.stringify(test.llm!.requests.at(-1));
      expect(request.length, name).toBeGreaterThan(text.length);
    }
  }, 60_000);

  it("estimates tokens and picks the recent history of a thousand megabyte messages in linear time", () => {
    const text = inputs["100,000 short lines"]!;
    const messages: StoredMessage[] = [];
    const elapsed = timed(() => {
      for (let index = 0; index < 1000; index++) {
        const message = { role: index % 2 ? "assistant" : "user", content: text } as StoredMessage["message"];
        messages.push({ id: index, message, tokens: estimateMessageTokens(message) } as StoredMessage);
      }
      recentWithinBudget(messages, 100_000);
    });
    expect(elapsed).toBeLessThan(LINEAR_BOUND_MS);
  });
});

describe("input size: tool output → redaction → spill", () => {
  let harness: ToolHarness;
  let registry: ToolRegistry;

  beforeAll(async () => {
    harness = await createToolHarness({ tools: { files: { maxFileSizeBytes: 4 * MB } } });
    // The registry the agent loop uses: redaction with a secret to look for, then the spill.
    registry = new ToolRegistry({
      config: harness.config,
      logger: silentLogger(),
      services: {
        store: harness.store,
        redactor: new Redactor().add("hunter2-password-value"),
        homeDir: harness.home,
      },
      approvals: { request: async () => "approved" },
      spill: new SpillStore(path.join(harness.root, "spill"), 20_000),
    });
    registry.register(...(builtinTools.filter((tool) => tool.name === "file_read") as Tool[]));
  });
  afterAll(() => harness.cleanup());

  it.each(cases)(
    "runs a file_read of %s through redaction and the spill in linear time",
    async (name, text) => {
      await fs.writeFile(path.join(harness.workspace, "big.txt"), `${text}\nhunter2-password-value\n`);
      const started = performance.now();
      const output = await registry.execute(
        { id: "read", type: "function", function: { name: "file_read", arguments: '{"path": "big.txt"}' } },
        ["file_read"],
        ownerCallContext({ channel: "test", chatId: "chat" }),
      );
      expect(performance.now() - started, name).toBeLessThan(LINEAR_BOUND_MS);
      expect(output).not.toContain("hunter2-password-value");
    },
  );

  it("spills a megabyte in linear time and keeps all of it", async () => {
    const spill = new SpillStore(path.join(harness.root, "spill"), 10_000);
    for (const [name, text] of cases) {
      let excerpt = "";
      expect(
        timed(() => (excerpt = spill.maybeSpill(text, "shell"))),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
      const handle = /"(spill-[a-f0-9]{16})"/.exec(excerpt)![1]!;
      expect(spill.read(handle, 0, 2 * MB)!.text).toBe(text);
    }
  });

  it("repairs (or refuses) a megabyte of broken JSON arguments in linear time", async () => {
    const broken = [
      `{"path": "big.txt", "note": "${"a".repeat(MB)}`,
      `{path: 'big.txt', note: '${"b\\'".repeat(MB / 3)}', }`,
      "[".repeat(MB),
      `{"a":${'{"a":'.repeat(MB / 5)}`,
      inputs["quotes and braces"]!,
      `\`\`\`json\n{"path": "big.txt",${' "k": [1, 2,'.repeat(MB / 12)}\n`,
    ];
    for (const [index, text] of broken.entries()) {
      const started = performance.now();
      const output = await registry.execute(
        { id: `broken-${index}`, type: "function", function: { name: "file_read", arguments: text } },
        ["file_read"],
        ownerCallContext({ channel: "test", chatId: "chat" }),
      );
      expect(performance.now() - started, `case ${index}`).toBeLessThan(LINEAR_BOUND_MS);
      expect(output.length).toBeGreaterThan(0);
    }
  });
});

describe("input size: the text tools take from outside", () => {
  it("turns a 5 MB page into text in linear time", () => {
    const paragraphs = `<p>Some <b>bold</b> and <a href="/x">a link</a> in a paragraph.</p>\n`.repeat(
      (5 * MB) / 70,
    );
    const pages = {
      "5 MB of paragraphs": `<html><head><title>Big</title></head><body>${paragraphs}</body></html>`,
      "a 3 MB inline image": `<html><body><h1>Photo</h1><img alt="photo" src="data:image/png;base64,${randomBytes(
        (3 * MB * 3) / 4,
      ).toString("base64")}"><p>After the image.</p></body></html>`,
      "5 MB of unclosed tags": `<html><body>${"<div><span>".repeat((5 * MB) / 11)}</body></html>`,
      "5 MB of one word": `<html><body><p>${"a".repeat(5 * MB)}</p></body></html>`,
    };
    for (const [name, html] of Object.entries(pages)) {
      let text = "";
      expect(
        timed(() => (text = htmlToReadable(html, "https://example.com/").text)),
        name,
        // Five megabytes through cheerio is seconds of linear work on a busy runner; quadratic was 33 s.
      ).toBeLessThan(LINEAR_BOUND_MS * 6);
      if (name === "a 3 MB inline image") expect(text).toContain("After the image.");
    }
    for (const [name, text] of cases) {
      expect(
        timed(() => htmlToReadable(text, "https://example.com/")),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
    }
  });

  it("checks a 100 KB shell command against the allow list in linear time", async () => {
    const commands = {
      "one long word": `echo ${"a".repeat(100_000)}`,
      "many pipes": `${"cat x | ".repeat(10_000)}cat`,
      "nested substitutions": `echo ${"$(".repeat(5_000)}ls${")".repeat(5_000)}`,
      "unclosed quotes": `echo ${"'\"".repeat(50_000)}`,
      "many commands": "ls; ".repeat(25_000),
      "a heredoc": `cat <<EOF\n${"line\n".repeat(20_000)}EOF`,
    };
    for (const [name, command] of Object.entries(commands)) {
      const started = performance.now();
      await checkShellPolicy(command, {
        allowCommands: ["echo", "cat", "ls"],
        denyPatterns: ["rm\\s+-rf\\s+/"],
        searchPath: "/usr/bin:/bin",
      }).catch(() => undefined);
      expect(performance.now() - started, name).toBeLessThan(LINEAR_BOUND_MS * 2);
    }
  });

  it("judges a 100 KB path and 10,000 ../ segments in linear time", async () => {
    const harness = await createToolHarness();
    try {
      const paths = {
        "100 KB path": "a/".repeat(50_000),
        "100 KB name": "a".repeat(100_000),
        "10,000 ../": "../".repeat(10_000),
        "10,000 ../ then a file": `${"../".repeat(10_000)}etc/passwd`,
        "10,000 ./": `${"./".repeat(10_000)}x.txt`,
        "100 KB home path": `~/${"b/".repeat(50_000)}`,
      };
      for (const [name, requested] of Object.entries(paths)) {
        for (const tool of ["file_read", "file_write", "file_list"]) {
          const args = tool === "file_write" ? { path: requested, content: "x" } : { path: requested };
          const started = performance.now();
          const output = await harness.call(tool, args);
          expect(performance.now() - started, `${tool} ${name}`).toBeLessThan(LINEAR_BOUND_MS);
          expect(output.length).toBeGreaterThan(0);
        }
      }
    } finally {
      await harness.cleanup();
    }
  });

  it.each(cases)("parses text tool calls in %s in linear time", (_name, text) => {
    expect(timed(() => parseTextToolCalls(text, "t"))).toBeLessThan(LINEAR_BOUND_MS);
    expect(timed(() => parseTextToolCalls(`<tool_call>${text}`, "t"))).toBeLessThan(LINEAR_BOUND_MS);
    expect(timed(() => parseTextToolCalls(`\`\`\`json\n${text}`, "t"))).toBeLessThan(LINEAR_BOUND_MS);
  });

  it("parses a megabyte of fenced junk blocks in linear time", () => {
    for (const unit of ["```{x}```", "<tool_call>{x}</tool_call>", '```json\n{"name": 1}\n```']) {
      const text = unit.repeat(MB / unit.length);
      expect(
        timed(() => parseTextToolCalls(text, "t")),
        unit,
      ).toBeLessThan(LINEAR_BOUND_MS);
    }
  });

  it.each(cases)("reveals invisible characters in %s in linear time", (_name, text) => {
    expect(timed(() => revealInvisible(text))).toBeLessThan(LINEAR_BOUND_MS);
  });

  it("reveals a megabyte of invisible and bidirectional characters in linear time", () => {
    for (const unit of ["\u200b", "\u202e", "a\u2066", "\u0000\u0007", "\u{e0041}"]) {
      const text = unit.repeat(MB / unit.length);
      let out = "";
      expect(
        timed(() => (out = revealInvisible(text))),
        JSON.stringify(unit),
      ).toBeLessThan(LINEAR_BOUND_MS);
      expect(out.length).toBeGreaterThan(text.length);
    }
  });
});

describe("file_grep: the model's regex can't stall the bot", () => {
  let harness: ToolHarness;

  beforeAll(async () => {
    harness = await createToolHarness();
    await fs.writeFile(path.join(harness.workspace, "aaa.txt"), `${"a".repeat(100_000)}b\nsecond line\n`);
  });
  afterAll(() => harness.cleanup());

  /** Runs one file_grep call while a 20 ms heartbeat measures how long the loop was held at most. */
  async function grepWithHeartbeat(input: Record<string, unknown>) {
    let last = performance.now();
    let maxLag = 0;
    const heartbeat = setInterval(() => {
      const now = performance.now();
      maxLag = Math.max(maxLag, now - last);
      last = now;
    }, 20);
    const started = performance.now();
    try {
      const output = await harness.call("file_grep", input);
      return { output, elapsed: performance.now() - started, maxLag };
    } finally {
      clearInterval(heartbeat);
    }
  }

  it.each<[string, number[]]>([
    ["(a+)+$", []],
    ["(a|aa)+$", []],
    ["^(a|a?)+$", [3]],
    ["(.*a){20}$", []],
    ["^(\\w+\\s?)*c$", []],
    ["(a+)+b$", [1]],
  ])(
    "%s over 100,000 a's answers RE2's result (lines %j) at once, the loop kept running",
    async (pattern, lines) => {
      const { output, elapsed, maxLag } = await grepWithHeartbeat({ pattern, path: "aaa.txt" });
      expect(errorCode(output), output).toBeNull();
      expect(JSON.parse(output).matches.map((match: { line: number }) => match.line)).toEqual(lines);
      expect(elapsed).toBeLessThan(GREP_TIME_LIMIT_MS);
      expect(maxLag).toBeLessThan(500);
    },
  );

  it("lookaround and backreferences are refused with RE2's rules, so the model can rewrite the pattern", async () => {
    for (const pattern of ["(a+)+(?=c)", "(a)\\1", "(?<!x)a"]) {
      const output = await harness.call("file_grep", { pattern });
      expect(errorCode(output), output).toBe("grep.invalid_regex");
      expect(output).toContain("no backreferences");
    }
  });

  it("a pattern built to defeat RE2's automaton is still stopped at the time limit, off the loop", async () => {
    const random = randomBytes(MB);
    const text = Array.from(random, (byte) => (byte & 1 ? "a" : "b")).join("");
    await fs.writeFile(path.join(harness.workspace, "ab.txt"), text);
    const { output, elapsed, maxLag } = await grepWithHeartbeat({
      pattern: "(?:.{0,50}a){20}$",
      path: "ab.txt",
    });
    expect(errorCode(output), output).toBe("grep.pattern_too_slow");
    expect(output).toContain("simplify it");
    expect(elapsed).toBeLessThan(GREP_TIME_LIMIT_MS + 3000);
    expect(maxLag).toBeLessThan(500);
  }, 20_000);

  it("still finds matches, in order, up to the cap", async () => {
    await fs.mkdir(path.join(harness.workspace, "src"), { recursive: true });
    await fs.writeFile(path.join(harness.workspace, "src", "b.ts"), "x\nTODO one\ny\nTODO two\n");
    const result = JSON.parse(await harness.call("file_grep", { pattern: "TODO \\w+", path: "src" }));
    expect(result.matches).toEqual([
      { path: "src/b.ts", line: 2, text: "TODO one" },
      { path: "src/b.ts", line: 4, text: "TODO two" },
    ]);
    const capped = JSON.parse(await harness.call("file_grep", { pattern: "line|a", max_results: 1 }));
    expect(capped.count).toBe(1);
    expect(capped.truncated).toBe(true);
    expect(capped.matches[0].text.length).toBeLessThanOrEqual(501);
  });
});
