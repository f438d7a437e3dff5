import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";

describe("browser config", () => {
  it("defaults to off, idle 300 s, and refuses allowedDomains until browser_open exists", () => {
    const config = parseConfig({}, { env: {}, cwd: "/tmp", sourcePath: null, envFiles: [] });
    expect(config.browser).toEqual({ enabled: false, idleSecs: 300, allowedDomains: [] });
    expect(() =>
      parseConfig(
        { browser: { allowedDomains: ["example.com"] } },
        { env: {}, cwd: "/tmp", sourcePath: null },
      ),
    ).toThrow(/not supported yet/);
  });
});
