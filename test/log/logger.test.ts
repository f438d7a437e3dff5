import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { createRedactor } from "../../src/log/redact.js";
import { testConfig } from "../helpers/harness.js";

describe("logger", () => {
  it("writes JSON lines with configured secrets and secret-looking env values redacted", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const config = testConfig({ channels: { telegram: { token: "123456:TELEGRAM-SECRET" } } });
    const redactor = createRedactor(config, { GITHUB_TOKEN: "ghp_envsecret42", HARMLESS: "visible-value" });
    const logger = createLogger({ redactor, destination, pretty: false });
    logger.info(
      { url: "https://api.telegram.org/bot123456:TELEGRAM-SECRET/getMe", note: "visible-value" },
      "token ghp_envsecret42 used",
    );
    logger.warn({ err: new Error("failed with 123456:TELEGRAM-SECRET") }, "oops");
    const text = lines.join("");
    expect(text).not.toContain("TELEGRAM-SECRET");
    expect(text).not.toContain("ghp_envsecret42");
    expect(text).toContain("visible-value");
    expect(text).toContain("[REDACTED]");
    expect(lines.every((line) => JSON.parse(line))).toBeTruthy();
  });
});

describe("logger without a redactor", () => {
  it("still logs (an empty redactor is used)", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    createLogger({ destination }).info({ n: 1 }, "plain");
    expect(JSON.parse(lines[0]!)).toMatchObject({ n: 1, msg: "plain" });
  });
});

/** What a stranger, a guest or a model can put into a log line: OSC 52, clear screen, backspaces, C1 CSI, DEL. */
const HOSTILE = "\u001b]52;c;cm0gLXJmIH4=\u0007\u001b[2J\b\b\b\u009b31m\u007f\u202eevil";
/** A byte a terminal acts on, other than the SGR colour codes pino-pretty writes itself. */
const RAW_CONTROL = /\u001b(?!\[[0-9;]*m)|[\u0000-\u0008\u000b-\u001a\u001c-\u001f\u007f-\u009f\u202e]/u;

describe("pretty logs in a terminal (attack)", () => {
  it("show a hostile message, field, error and child binding as ⟦U+XXXX⟧; JSON lines keep the value", () => {
    const pretty: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        pretty.push(String(chunk));
        done();
      },
    });
    const logger = createLogger({ destination, pretty: true }).child({ chat: HOSTILE });
    logger.warn(
      { tool: HOSTILE, nested: { name: HOSTILE }, err: new Error(`failed: ${HOSTILE}`) },
      `tool ${HOSTILE} failed`,
    );
    logger.info("plain %s", HOSTILE);
    const text = pretty.join("");
    expect(text).toContain("⟦U+001B⟧]52;c;cm0gLXJmIH4=⟦U+0007⟧⟦U+001B⟧[2J⟦U+0008⟧");
    expect(text).toContain("⟦U+009B⟧31m⟦U+007F⟧⟦U+202E⟧evil");
    expect(text.match(RAW_CONTROL)).toBeNull();

    const lines: string[] = [];
    const json = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    createLogger({ destination: json, pretty: false }).warn({ tool: HOSTILE }, HOSTILE);
    expect(JSON.parse(lines[0]!)).toMatchObject({ tool: HOSTILE, msg: HOSTILE });
  });
});
