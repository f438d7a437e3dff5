import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConsoleChannel } from "../../../channels/console.js";
import { renderForTerminal } from "../../../channels/format/terminal.js";

const plain = { color: false };
const color = { color: true };

describe("renderForTerminal", () => {
  it("plain output: no Markdown markers left", () => {
    const markdown = [
      "# Disk report",
      "**Root** is *92 %* full, see `df -h` and [docs](https://x.test).",
      "- one",
      "  * two",
      "> quoted",
      "```bash",
      "du -sh /var/*",
      "```",
      "~~old~~ done",
    ].join("\n");
    expect(renderForTerminal(markdown, plain)).toBe(
      [
        "Disk report",
        "Root is 92 % full, see df -h and docs (https://x.test).",
        "• one",
        "  • two",
        "│ quoted",
        "│ du -sh /var/*",
        "old done",
      ].join("\n"),
    );
  });

  it("colour terminal: bold, italic, code and headings as ANSI styles", () => {
    expect(renderForTerminal("**b** _i_ `c`", color)).toBe(
      "\u001b[1mb\u001b[22m \u001b[3mi\u001b[23m \u001b[36mc\u001b[39m",
    );
    expect(renderForTerminal("## H", color)).toBe("\u001b[1m\u001b[4mH\u001b[24m\u001b[22m");
  });

  it("leaves snake_case, arithmetic and code contents alone", () => {
    expect(renderForTerminal("my_var_name is 2*3*4", plain)).toBe("my_var_name is 2*3*4");
    expect(renderForTerminal("`**x**`", plain)).toBe("**x**");
    expect(renderForTerminal("```\na **b**\n```", plain)).toBe("│ a **b**");
  });
});

describe("console channel", () => {
  it("prints replies rendered for the terminal, plain-format replies as they are", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let printed = "";
    output.on("data", (chunk) => (printed += chunk));
    const channel = new ConsoleChannel({ input, output, color: false });
    await channel.start({ message: async () => {} } as never);
    const target = { channel: "console", chatId: "local" };
    await channel.send(target, { text: "**Done**: `ok`" });
    await channel.send(target, { text: "**kept**", format: "plain" });
    expect(printed).toContain("magpie> Done: ok\n");
    expect(printed).toContain("magpie> **kept**\n");
    await channel.stop();
  });
});
