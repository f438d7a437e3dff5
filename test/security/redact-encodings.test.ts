import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { createLogger } from "../../src/log/logger.js";
import { createRedactor, REDACTED, Redactor } from "../../src/log/redact.js";

/** Attack: a secret the agent could read comes back encoded, as `base64`, `xxd -p`, `rev` would print it. */

const SECRET = "xoxq-not-a-known-format-8f3Kd92Lm";
const redactor = () => new Redactor().add(SECRET);

/** The secret embedded at byte offset `offset` of random bytes, base64-encoded as a whole stream. */
function embeddedBase64(secret: string, offset: number, encoding: "base64" | "base64url" = "base64"): string {
  return Buffer.concat([randomBytes(30 + offset), Buffer.from(secret), randomBytes(31)]).toString(encoding);
}

/** The secret's own bytes can't be decoded from the redacted text at any alignment. */
function leaks(text: string, secret: string): boolean {
  const compact = text.replace(/\s+/g, "");
  for (const encoding of ["base64", "base64url"] as const) {
    for (let start = 0; start < 4; start++) {
      if (Buffer.from(compact.slice(start), encoding).toString("latin1").includes(secret)) return true;
    }
  }
  const bytes = Buffer.from(secret);
  return (
    text.includes(secret) ||
    text.toLowerCase().includes(bytes.toString("hex")) ||
    text.includes([...secret].reverse().join(""))
  );
}

describe("Redactor: encoded forms of a known secret", () => {
  it("catches base64 at each of the three byte alignments inside a longer base64 stream", () => {
    for (const offset of [0, 1, 2]) {
      for (let trial = 0; trial < 20; trial++) {
        const stream = embeddedBase64(SECRET, offset);
        const redacted = redactor().redact(`output: ${stream}`);
        expect(redacted, `offset ${offset}`).toContain(REDACTED);
        expect(leaks(redacted, SECRET), `offset ${offset}: ${redacted}`).toBe(false);
      }
    }
  });

  it("catches base64url and unpadded base64, alone and embedded", () => {
    for (const offset of [0, 1, 2]) {
      const redacted = redactor().redact(embeddedBase64(SECRET, offset, "base64url"));
      expect(redacted).toContain(REDACTED);
      expect(leaks(redacted, SECRET)).toBe(false);
    }
    const alone = Buffer.from(SECRET).toString("base64").replace(/=+$/, "");
    expect(redactor().redact(`k=${alone}`)).toContain(REDACTED);
    expect(redactor().redact(Buffer.from(SECRET).toString("base64url"))).toContain(REDACTED);
  });

  it("catches base64 wrapped into lines (base64's 76 columns, fold -w 10)", () => {
    const stream = embeddedBase64(SECRET, 1);
    for (const width of [76, 10, 3]) {
      const wrapped = stream.match(new RegExp(`.{1,${width}}`, "g"))!.join("\n");
      const redacted = redactor().redact(wrapped);
      expect(redacted, `width ${width}`).toContain(REDACTED);
      expect(leaks(redacted, SECRET)).toBe(false);
    }
  });

  it("catches hex in lower and upper case, and the reversed secret", () => {
    const hex = Buffer.from(SECRET).toString("hex");
    for (const text of [hex, hex.toUpperCase(), `00ff${hex}aa`, [...SECRET].reverse().join("")]) {
      const redacted = redactor().redact(`x ${text} y`);
      expect(redacted, text).toContain(REDACTED);
      expect(leaks(redacted, SECRET)).toBe(false);
    }
  });

  it("leaves ordinary text and unrelated base64/hex alone", () => {
    const samples = [
      "The deploy finished in 12.5 s; see https://example.org/build/42 for details.",
      Buffer.from("just some harmless text that is not secret at all").toString("base64"),
      randomBytes(64).toString("hex"),
      "line one\nline two\nconfiguration\nThe end",
      randomBytes(300)
        .toString("base64")
        .match(/.{1,76}/g)!
        .join("\n"),
    ];
    for (const text of samples) expect(redactor().redact(text)).toBe(text);
  });

  it("covers secrets from .env (secret names and URL passwords) and mcpServers.*.env", () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-redact-"));
    const envFile = path.join(cwd, ".env");
    writeFileSync(
      envFile,
      "DATABASE_URL=postgres://app:pg-pass-9Xq2w@db.lan:5432/app\nMQTT_PASS=mqtt-secret-77\nGREETING=hello-world\n",
    );
    const config = parseConfig(
      {
        mcpServers: { github: { command: "gh-mcp", env: { GH_TOKEN: "ghmcp-value-123", MODE: "readonly" } } },
      },
      { env: {}, cwd, envFiles: [envFile] },
    );
    const redactor = createRedactor(config, {
      REDIS_URL: "redis://default:redis-pw-4455@cache:6379",
      HOME: "/home/pi",
    });
    const base64 = (value: string) => Buffer.from(value).toString("base64");
    const text = [
      "pg-pass-9Xq2w",
      base64("mqtt-secret-77"),
      Buffer.from("ghmcp-value-123").toString("hex"),
      "redis-pw-4455",
      "hello-world readonly /home/pi",
    ].join(" | ");
    const redacted = redactor.redact(text);
    // The padding characters after an encoded run may stay; nothing of the secrets does.
    expect(redacted).toMatch(
      /^\[REDACTED\] \| \[REDACTED\][\w=]{0,3} \| \[REDACTED\] \| \[REDACTED\] \| hello-world readonly \/home\/pi$/,
    );
    for (const secret of ["pg-pass-9Xq2w", "mqtt-secret-77", "ghmcp-value-123", "redis-pw-4455"]) {
      expect(leaks(redacted, secret), secret).toBe(false);
    }
  });

  it("redacts the encoded forms in log lines too", () => {
    const lines: string[] = [];
    const destination = {
      write: (line: string) => void lines.push(line),
    } as unknown as NodeJS.WritableStream;
    const logger = createLogger({ redactor: redactor(), destination, level: "info" });
    logger.info({ output: embeddedBase64(SECRET, 2) }, `hex ${Buffer.from(SECRET).toString("hex")}`);
    expect(lines.join("")).toContain(REDACTED);
    expect(leaks(lines.join(""), SECRET)).toBe(false);
  });

  it("stays fast: 1 MB of mixed text with 20 secrets", () => {
    const secrets = Array.from(
      { length: 20 },
      (_, index) => `secret-${index}-${randomBytes(12).toString("hex")}`,
    );
    const many = new Redactor();
    const addStarted = performance.now();
    many.add(...secrets);
    const addMs = performance.now() - addStarted;
    const prose = "the quick brown fox jumps over the lazy dog while Magpie watches the logs\n".repeat(7000);
    const wrapped = randomBytes(300_000)
      .toString("base64")
      .match(/.{1,76}/g)!
      .join("\n");
    const planted = secrets.map((secret, index) => embeddedBase64(secret, index % 3)).join("\n");
    const text = `${prose}${wrapped}\n${planted}`.slice(0, 1024 * 1024 - planted.length) + planted;
    let best = Number.POSITIVE_INFINITY;
    let out = "";
    for (let run = 0; run < 5; run++) {
      const started = performance.now();
      out = many.redact(text);
      best = Math.min(best, performance.now() - started);
    }
    console.log(
      `redaction: add(20 secrets) ${addMs.toFixed(1)} ms; 1 MB with 20 secrets ${best.toFixed(1)} ms (best of 5)`,
    );
    for (const secret of secrets) expect(leaks(out.slice(-planted.length - 500), secret)).toBe(false);
    expect(best).toBeLessThan(500);
  });
});
