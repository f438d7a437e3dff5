import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { createRedactor, Redactor } from "../../src/log/redact.js";

describe("Redactor", () => {
  it("removes configured secrets and secret-named environment variables", () => {
    const config = parseConfig(
      { tools: { web: { braveApiKey: "brave-configured-1234" } } },
      { env: {}, cwd: "/tmp" },
    );
    const redactor = createRedactor(config, { MY_SERVICE_TOKEN: "tok-env-5678", HOME: "/home/pi" });
    expect(redactor.redact("a brave-configured-1234 b tok-env-5678 c /home/pi")).toBe(
      "a [REDACTED] b [REDACTED] c /home/pi",
    );
    expect(
      redactor.redactDeep({ list: ["tok-env-5678"], nested: { value: "x brave-configured-1234" } }),
    ).toEqual({
      list: ["[REDACTED]"],
      nested: { value: "x [REDACTED]" },
    });
  });

  it("removes well-known credential formats even when they were never configured", () => {
    const redactor = new Redactor();
    const samples = [
      "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345",
      "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
      "SLACK=xoxb-1234567890-abcdefghij",
      "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
      "key=AIzaSyA-abcdefghijklmnopqrstuvwxyz012345",
      "bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 here",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
    ];
    for (const sample of samples) {
      const redacted = redactor.redact(sample);
      expect(redacted, sample).toContain("[REDACTED]");
      expect(redacted).not.toMatch(/abcdefghij|IOSFODNN|AAHdqTcv|b3BlbnNz/);
    }
    expect(redactor.redact('{"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig"}')).toBe(
      '{"Authorization": "Bearer [REDACTED]"}',
    );
    expect(redactor.redact("authorization: Basic dXNlcjpwYXNz")).toBe("authorization: Basic [REDACTED]");
  });

  it("leaves ordinary text alone", () => {
    const redactor = new Redactor();
    for (const text of [
      "task-force risk-high desk-1234567890123456789012",
      "sk-short",
      "time 12:30:45",
      "The risk: high",
      "Authorization required",
    ]) {
      expect(redactor.redact(text)).toBe(text);
    }
  });
});
