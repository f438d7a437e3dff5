import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { cutLongInbound } from "../../src/core/inbound-size.js";
import type { InboundMessage } from "../../src/core/types.js";
import { LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";

const message = (text: string): InboundMessage => ({
  channel: "telegram",
  chatId: "42",
  messageId: "7/../x",
  userId: "1",
  userName: "owner",
  text,
  isDirect: true,
  mentionsBot: false,
  attachments: [],
  receivedAt: 0,
  raw: null,
});

describe("agent.maxInboundChars", () => {
  it("defaults to 100,000", () => {
    expect(parseConfig({}).agent.maxInboundChars).toBe(100_000);
  });

  it("cuts a 5 MB text at the limit and keeps the rest as a workspace file the text names", () => {
    const workspace = mkdtempSync(path.join(tmpdir(), "magpie-inbound-"));
    const text = `${"x".repeat(100_000)}${"y".repeat(5 * 1024 * 1024)}`;
    let cut = message("");
    expect(timed(() => (cut = cutLongInbound(message(text), 100_000, workspace)))).toBeLessThan(
      LINEAR_BOUND_MS,
    );
    expect(cut.text.startsWith("x".repeat(100_000))).toBe(true);
    expect(cut.text).not.toContain("y");
    const file = /workspace file (\S+)/.exec(cut.text)![1]!;
    // The message id can't steer the file out of inbound/.
    expect(file).toBe(path.join("inbound", "telegram-7_.._x.txt"));
    expect(readFileSync(path.join(workspace, file), "utf8")).toBe("y".repeat(5 * 1024 * 1024));
  });

  it("leaves a text within the limit alone", () => {
    const short = message("hello");
    expect(cutLongInbound(short, 100_000, "/nonexistent")).toBe(short);
  });
});
