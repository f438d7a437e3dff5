import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { jsonText, terminalOutput } from "../../src/cli/terminal-output.js";
import { hostileInputs, LINEAR_BOUND_MS, MB, timed } from "../helpers/hostile-inputs.js";

/** Every character terminalOutput must not pass raw: C0 but \n and \t, DEL, C1, U+2028/9, format characters. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]|\p{Cf}/u;
const HOSTILE =
  "\u001b]52;c;cm0g\u0007\u001b[2J\b\r\u009b31m\u007f\u202e\u2066\u200b\u2028\ufeff\u{e0041}tag\u0000end";

function captured(): { output: ReturnType<typeof terminalOutput>; text: () => string } {
  const chunks: string[] = [];
  const stream = { write: (chunk: string) => chunks.push(chunk) } as unknown as NodeJS.WritableStream;
  return { output: terminalOutput(stream), text: () => chunks.join("") };
}

describe("terminal output (attack)", () => {
  it("shows control, C1, DEL, bidi and invisible characters as ⟦U+XXXX⟧; keeps newlines, tabs and text", () => {
    const { output, text } = captured();
    output.write(`name:\t${HOSTILE}\nnext line ✓ — ünïcode 👍\n`);
    expect(text()).toBe(
      "name:\t⟦U+001B⟧]52;c;cm0g⟦U+0007⟧⟦U+001B⟧[2J⟦U+0008⟧⟦U+000D⟧⟦U+009B⟧31m⟦U+007F⟧⟦U+202E⟧⟦U+2066⟧⟦U+200B⟧⟦U+2028⟧⟦U+FEFF⟧⟦U+E0041⟧tag⟦U+0000⟧end\nnext line ✓ — ünïcode 👍\n",
    );
    expect(text()).not.toMatch(RAW);
  });

  it("--json: nothing raw, and the same value once parsed (astral format characters too)", () => {
    const value = { text: HOSTILE, nested: [HOSTILE], [HOSTILE]: 1 };
    for (const indent of [undefined, 2]) {
      const json = jsonText(value, indent);
      expect(json).not.toMatch(RAW);
      expect(JSON.parse(json)).toEqual(value);
      // Nothing left for the terminal writer to change.
      const { output, text } = captured();
      output.write(json);
      expect(text()).toBe(json);
    }
  });

  it("stays linear on 1 MB inputs", () => {
    const inputs = { ...hostileInputs(), "1 MB of escapes": "\u001b\u009b".repeat(MB / 2) };
    const { output } = captured();
    for (const [name, input] of Object.entries(inputs)) {
      expect(
        timed(() => output.write(input)),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
      expect(
        timed(() => jsonText({ input })),
        name,
      ).toBeLessThan(LINEAR_BOUND_MS);
    }
  });
});

describe("fitness: the CLI prints only through terminalOutput", () => {
  it("no file under src/cli writes to process.stdout/stderr or the console itself", () => {
    const files = readdirSync("src/cli", { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".ts"),
    );
    expect(files.length).toBeGreaterThan(10);
    const offenders = files.filter((file) =>
      /process\.(stdout|stderr)\.write|console\.(log|info|warn|error)\(/.test(
        readFileSync(path.join("src/cli", file), "utf8"),
      ),
    );
    expect(offenders).toEqual([]);
    // main.ts hands the commands the wrapped streams, never the raw ones.
    const main = readFileSync("src/cli/main.ts", "utf8");
    expect(main).toContain("terminalOutput(process.stdout)");
    expect(main).toContain("terminalOutput(process.stderr)");
    expect(main).not.toMatch(/stdout: process\.stdout|stderr: process\.stderr/);
  });
});
