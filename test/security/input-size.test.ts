import { describe, expect, it } from "vitest";
import { REDACTED, Redactor } from "../../src/log/redact.js";
import { redactSecretPatterns } from "../../src/log/secret-patterns.js";
import { hostileInputs, LINEAR_BOUND_MS, timed } from "../helpers/hostile-inputs.js";

/**
 * Attack: one long input must not freeze the bot. Every text path gets a megabyte built to make a backtracking
 * regex or a naive parser go quadratic, and must finish well inside a bound that linear work meets with room
 * to spare (quadratic work on a megabyte takes minutes to hours).
 */

const inputs = hostileInputs();

describe("input size: redaction", () => {
  const redactor = new Redactor().add("xoxq-not-a-known-format-8f3Kd92Lm", "hunter2-password-value");

  it.each(Object.entries(inputs))("redacts %s in linear time", (_name, text) => {
    expect(timed(() => redactor.redact(text))).toBeLessThan(LINEAR_BOUND_MS);
    expect(timed(() => redactSecretPatterns(text, REDACTED))).toBeLessThan(LINEAR_BOUND_MS);
  });

  it("still joins a secret split across wrapped lines after a megabyte of one word", () => {
    const encoded = Buffer.from("hunter2-password-value").toString("base64");
    const text = `${inputs["one word, then a space and a newline"]}${encoded.slice(0, 10)}\n${encoded.slice(10)}\n`;
    let out = "";
    expect(timed(() => (out = redactor.redact(text)))).toBeLessThan(LINEAR_BOUND_MS);
    const tail = out.slice(inputs["one word, then a space and a newline"]!.length);
    expect(tail).toContain(REDACTED);
    expect(tail).not.toContain(encoded.slice(0, 10));
  });

  it("still removes a private key block after a megabyte of unterminated BEGIN lines", () => {
    const block =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----";
    const out = redactSecretPatterns(`${block}\n${inputs["private key headers without an end"]}`, REDACTED);
    expect(out.startsWith(`${REDACTED}\n-----BEGIN RSA`)).toBe(true);
    expect(redactSecretPatterns(`a ${block} b ${block} c`, REDACTED)).toBe(`a ${REDACTED} b ${REDACTED} c`);
  });
});
