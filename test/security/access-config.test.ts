import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseConfig } from "../../src/config/load.js";

describe("access config", () => {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-access-config-"));

  it("refuses a Discord id written as a YAML number that lost digits, naming the key", () => {
    expect(() =>
      parseConfig(parse("channels:\n  discord:\n    allowFrom: [100000000000000001]\n"), { env: {}, cwd }),
    ).toThrow(/channels\.discord\.allowFrom\[0\].*quote it/);
  });

  it("accepts ids as strings or safe numbers and keeps them as strings", () => {
    const config = parseConfig(
      { channels: { telegram: { allowFrom: [123456789, "987"], groups: [-1001234567890] } } },
      { env: {}, cwd },
    );
    expect(config.channels.telegram.allowFrom).toEqual(["123456789", "987"]);
    expect(config.channels.telegram.groups).toEqual(["-1001234567890"]);
  });
});
