import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConsoleChannel } from "../../channels/console.js";

/**
 * `magpie chat` prints the model's reply in the owner's terminal. The reply can carry what a web page or a mail
 * put there (prompt injection), so control characters never reach the terminal raw: an OSC 52 clipboard write,
 * a clear screen, a C1 CSI, backspaces and DEL show as visible markers, in Markdown and plain replies alike.
 */
const HOSTILE = "ok\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\u009b31m\b\b\u007f done";

async function printedFor(format: "markdown" | "plain", color: boolean): Promise<string> {
  const output = new PassThrough();
  let printed = "";
  output.on("data", (chunk) => {
    printed += String(chunk);
  });
  const terminal = new ConsoleChannel({ input: new PassThrough(), output, color });
  await terminal.send(
    { channel: "console", chatId: "local" },
    {
      text: `**bold** ${HOSTILE}`,
      format,
      file: { path: "/w/a\u001b[2J.png", name: "a.png", kind: "photo" },
    },
  );
  return printed;
}

describe("console channel: a hostile reply reaches the terminal escaped", () => {
  for (const format of ["markdown", "plain"] as const) {
    it(`${format}: no raw C0, C1 or DEL from the reply; the markers show`, async () => {
      const printed = await printedFor(format, false);
      expect(printed).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      expect(printed).toContain("⟦U+001B⟧]52;c;");
      expect(printed).toContain("⟦U+009B⟧");
      expect(printed).toContain("[photo: /w/a⟦U+001B⟧[2J.png]");
    });
  }

  it("with colour on, only the renderer's own SGR escapes remain", async () => {
    const printed = await printedFor("markdown", true);
    const escapes = printed.match(/\u001b\[[0-9;]*m/g) ?? [];
    expect(escapes.length).toBeGreaterThan(0);
    expect(printed.replace(/\u001b\[[0-9;]*m/g, "")).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });
});
