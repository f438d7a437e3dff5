import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";

describe("browser config", () => {
  it("defaults to off, idle 300 s and no allowed domains", () => {
    const config = parseConfig({}, { env: {}, cwd: "/tmp", sourcePath: null, envFiles: [] });
    expect(config.browser).toEqual({ enabled: false, idleSecs: 300, allowedDomains: [] });
  });
});
