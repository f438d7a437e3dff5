import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/logger.js";
import { createRedactor } from "../../src/security/redact.js";
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
