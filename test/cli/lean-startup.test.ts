import { describe, expect, it } from "vitest";
import { modulesLoadedAtStart } from "../helpers/loaded-modules.js";

describe("start-up stays lean", () => {
  it("loads no chat library, LLM SDK, HTML parser, HTTP client or process runner until they are used", async () => {
    // An LLM is configured (the SDK must still wait for the first request); no chat channel is enabled.
    const { packages: loaded } = await modulesLoadedAtStart("http:\n  port: 0\nllm:\n  apiKey: sk-test\n");
    // The hook works: the packages start-up really needs are seen.
    expect(loaded).toContain("better-sqlite3");
    expect(loaded).toContain("zod");
    for (const heavy of [
      "openai",
      "cheerio",
      "undici",
      "execa",
      "image-size",
      "grammy",
      "discord.js",
      "@slack/bolt",
      "pino-pretty",
      "playwright-core",
      "@modelcontextprotocol/sdk",
      "jsonrepair",
      "web-tree-sitter",
      "serialport",
      "onoff",
      "i2c-bus",
      "spi-device",
    ]) {
      expect(loaded, heavy).not.toContain(heavy);
    }
  });
});
