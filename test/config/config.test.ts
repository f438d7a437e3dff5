import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, parseConfig } from "../../src/config/load.js";
import { ConfigError } from "../../src/lib/errors.js";

function problemsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

const cwd = mkdtempSync(path.join(tmpdir(), "magpie-config-"));

describe("config", () => {
  it("applies defaults and resolves paths", () => {
    const config = parseConfig({}, { env: {}, cwd });
    expect(config.dataDir).toBe(path.join(cwd, "data"));
    expect(config.workspace).toBe(path.join(cwd, "data", "workspace"));
    expect(config.http).toEqual({
      host: "127.0.0.1",
      port: 8787,
      maxEventLoopBlockMs: 5000,
      dashboard: { enabled: false },
      metrics: { enabled: false },
    });
    expect(config.agent).toMatchObject({ maxIterations: 20, maxConcurrentTurns: 4 });
    expect(config.channels.telegram).toMatchObject({
      dmPolicy: "pairing",
      groupPolicy: "allowlist",
      requireMention: true,
    });
    expect(config.security).toMatchObject({
      level: "medium",
      approvals: { require: ["guard:warn"], timeoutSecs: 300 },
    });
    expect(config.tools.shell).toMatchObject({ timeoutSecs: 60, maxOutputBytes: 1024 * 1024 });
    expect(config.sourcePath).toBeNull();
  });

  it("lists every problem by key path with the fix", () => {
    const problems = problemsOf(() =>
      parseConfig(
        {
          channels: { telegram: { allowFrom: 5, tokn: "x" }, slack: { dmPolicy: "pair" } },
          llm: { timeoutMs: "soon" },
          security: { level: "paranoid" },
          colour: "blue",
        },
        { env: {}, cwd },
      ),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^channels\.telegram\.allowFrom: expected a list of user ids, got 5/),
        expect.stringMatching(/^channels\.telegram\.tokn: unknown key — did you mean 'token'\?/),
        expect.stringMatching(
          /^channels\.slack\.dmPolicy: expected one of "pairing" \| "allowlist" \| "open" \| "disabled", got "pair"/,
        ),
        expect.stringMatching(/^llm\.timeoutMs: expected number, got "soon"/),
        expect.stringMatching(
          /^security\.level: expected one of "low" \| "medium" \| "high", got "paranoid"/,
        ),
        expect.stringMatching(/^colour: unknown key — remove it/),
      ]),
    );
    expect(problems).toHaveLength(6);
  });

  it("names list elements by index", () => {
    const problems = problemsOf(() =>
      parseConfig({ channels: { discord: { allowFrom: ["1", { id: 2 }] } } }, { env: {}, cwd }),
    );
    expect(problems[0]).toMatch(/^channels\.discord\.allowFrom\[1\]: /);
  });

  it("accepts ids as strings or numbers and keeps them as strings", () => {
    const config = parseConfig({ channels: { telegram: { allowFrom: [12345, "67890"] } } }, { env: {}, cwd });
    expect(config.channels.telegram.allowFrom).toEqual(["12345", "67890"]);
  });

  it("interpolates ${VAR} and ${VAR:-default}, and reports unset variables by key path", () => {
    const config = parseConfig(
      { llm: { apiKey: "${MY_KEY}", model: "${MODEL:-gpt-test}" } },
      { env: { MY_KEY: "sk-abc123" }, cwd },
    );
    expect(config.llm.apiKey).toBe("sk-abc123");
    expect(config.llm.model).toBe("gpt-test");
    const problems = problemsOf(() =>
      parseConfig({ channels: { telegram: { token: "${TG_TOKEN}" } } }, { env: {}, cwd }),
    );
    expect(problems[0]).toMatch(/^channels\.telegram\.token: environment variable TG_TOKEN is not set/);
  });

  it("works from environment variables alone (env-only mode)", () => {
    const config = parseConfig(
      {},
      {
        env: {
          OPENAI_API_KEY: "sk-env",
          OPENAI_BASE_URL: "http://127.0.0.1:11434/v1",
          MAGPIE_MODEL: "llama3",
          TELEGRAM_BOT_TOKEN: "123:abc",
          SLACK_BOT_TOKEN: "xoxb-1",
          PUSHOVER_TOKEN: "ptok",
          PUSHOVER_USER_KEY: "puser",
        },
        cwd,
      },
    );
    expect(config.llm).toMatchObject({
      apiKey: "sk-env",
      baseUrl: "http://127.0.0.1:11434/v1",
      model: "llama3",
    });
    expect(config.channels.telegram.token).toBe("123:abc");
    expect(config.channels.slack.botToken).toBe("xoxb-1");
    expect(config.notify.pushover).toMatchObject({ token: "ptok", user: "puser" });
  });

  it("reads MAGPIE_HTTP_HOST / MAGPIE_HTTP_PORT (containers) and treats an empty ${VAR:-} as not set", () => {
    const config = parseConfig(
      { llm: { apiKey: "${UNSET_KEY:-}" }, channels: { telegram: { token: "${UNSET_TOKEN:-}" } } },
      { env: { MAGPIE_HTTP_HOST: "0.0.0.0", MAGPIE_HTTP_PORT: "9000", OPENAI_API_KEY: "sk-from-env" }, cwd },
    );
    expect(config.http).toEqual({
      host: "0.0.0.0",
      port: 9000,
      maxEventLoopBlockMs: 5000,
      dashboard: { enabled: false },
      metrics: { enabled: false },
    });
    expect(config.llm.apiKey).toBe("sk-from-env");
    expect(config.channels.telegram.token).toBeUndefined();
  });

  it("lets the file win over environment fallbacks", () => {
    const config = parseConfig({ llm: { model: "from-file" } }, { env: { MAGPIE_MODEL: "from-env" }, cwd });
    expect(config.llm.model).toBe("from-file");
  });

  it("checks cross-key rules: routes to unknown agents, webhook without secret, bad time zone", () => {
    const problems = problemsOf(() =>
      parseConfig(
        {
          routes: [{ match: { channel: "telegram" }, agent: "ghost" }],
          channels: { telegram: { token: "1:x", mode: "webhook" } },
          timezone: "Mars/Olympus",
        },
        { env: {}, cwd },
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^routes\[0\]\.agent: unknown agent "ghost"/),
      expect.stringMatching(/^channels\.telegram\.webhookSecret: required when mode is webhook/),
      expect.stringMatching(/^timezone: unknown time zone "Mars\/Olympus"/),
    ]);
  });

  it("reads YAML from --config / MAGPIE_CONFIG, loads .env, and reports YAML syntax errors", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "magpie-yaml-"));
    writeFileSync(path.join(dir, "custom.yaml"), "llm:\n  apiKey: ${FROM_DOTENV}\n  model: m1\n");
    writeFileSync(path.join(dir, ".env"), "FROM_DOTENV=sk-dotenv\n");
    const env: NodeJS.ProcessEnv = {};
    const config = loadConfig({ configPath: "custom.yaml", cwd: dir, env });
    expect(config.llm.apiKey).toBe("sk-dotenv");
    expect(config.sourcePath).toBe(path.join(dir, "custom.yaml"));
    expect(loadConfig({ cwd: dir, env: { MAGPIE_CONFIG: "custom.yaml", FROM_DOTENV: "x" } }).llm.model).toBe(
      "m1",
    );

    writeFileSync(path.join(dir, "broken.yaml"), "llm:\n  model: [unclosed\n");
    expect(problemsOf(() => loadConfig({ configPath: "broken.yaml", cwd: dir, env: {} }))[0]).toMatch(
      /YAML syntax error/,
    );
    expect(problemsOf(() => loadConfig({ configPath: "missing.yaml", cwd: dir, env: {} }))[0]).toMatch(
      /missing\.yaml: config file not found/,
    );
  });

  it("accepts the documented example config", () => {
    const example = path.resolve("config/magpie.example.yaml");
    const config = loadConfig({
      configPath: example,
      cwd,
      env: { OPENAI_API_KEY: "sk-x" },
      loadDotenv: false,
    });
    expect(config.sourcePath).toBe(example);
  });
});
