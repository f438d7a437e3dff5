import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";

const cwd = mkdtempSync(path.join(tmpdir(), "magpie-dashboard-config-"));
const TOKEN = "0123456789abcdef0123";

function problems(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(raw, { env, cwd });
    return [];
  } catch (error) {
    return (error as { problems: string[] }).problems;
  }
}

describe("http.dashboard config", () => {
  it("is off by default", () => {
    expect(parseConfig({}, { env: {}, cwd }).http.dashboard).toEqual({ enabled: false });
  });

  it("enabled without a token is an error naming the key and the env var", () => {
    const found = problems({ http: { dashboard: { enabled: true } } });
    expect(found.join("\n")).toMatch(/http\.dashboard\.token/);
    expect(found.join("\n")).toMatch(/MAGPIE_DASHBOARD_TOKEN/);
  });

  it("refuses a short token", () => {
    expect(problems({ http: { dashboard: { enabled: true, token: "short" } } }).join("\n")).toMatch(
      /http\.dashboard\.token/,
    );
  });

  it("takes the token from MAGPIE_DASHBOARD_TOKEN", () => {
    const config = parseConfig(
      { http: { dashboard: { enabled: true } } },
      { env: { MAGPIE_DASHBOARD_TOKEN: TOKEN }, cwd },
    );
    expect(config.http.dashboard).toEqual({ enabled: true, token: TOKEN });
  });
});
