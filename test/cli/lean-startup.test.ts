import { describe, expect, it } from "vitest";
import { modulesLoadedAtStart } from "../helpers/loaded-modules.js";

describe("start-up stays lean", () => {
  it("loads no chat library, LLM SDK, HTML parser, HTTP client or process runner until they are used", async () => {
    // No LLM and no chat channel configured.
    const { packages: loaded, urls } = await modulesLoadedAtStart("http:\n  port: 0\n");
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
      "imapflow",
      "nodemailer",
      "mailparser",
      "pino-pretty",
      "playwright-core",
      "@modelcontextprotocol/sdk",
      "jsonrepair",
      "web-tree-sitter",
      "serialport",
      "onoff",
      "i2c-bus",
      "spi-device",
      "prom-client",
      "mqtt",
      "@marcbachmann/cel-js",
      "matrix-js-sdk",
    ]) {
      expect(loaded, heavy).not.toContain(heavy);
    }
    // Voice replies and the Matrix adapter load on first use / when configured, not at start-up.
    for (const lazy of ["/voice/speech.js", "/channels/matrix.js"]) {
      expect(
        urls.filter((url) => url.endsWith(lazy)),
        lazy,
      ).toEqual([]);
    }
  });

  it("with an LLM configured, its SDK is warmed up by ready (the first reply doesn't wait for it); nothing else", async () => {
    const { packages: loaded } = await modulesLoadedAtStart("http:\n  port: 0\nllm:\n  apiKey: sk-test\n");
    expect(loaded).toContain("openai");
    // The SDK's HTTP client (src/lib/lean-fetch.ts) is warmed up with it.
    expect(loaded).toContain("undici");
    for (const heavy of [
      "cheerio",
      "execa",
      "grammy",
      "discord.js",
      "@slack/bolt",
      "matrix-js-sdk",
      "playwright-core",
    ]) {
      expect(loaded, heavy).not.toContain(heavy);
    }
  });
});
