import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const CLI = path.resolve("dist/src/cli/main.js");

/** A module-resolve hook that reports every package the process imports, one `PKG <name>` line on stderr. */
const HOOK = `
import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(\`
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  const match = /node_modules\\\\/((?:@[^/]+\\\\/)?[^/]+)/.exec(result.url);
  if (match) process.stderr.write("PKG " + match[1] + "\\\\n");
  return result;
}\`));
`;

describe("start-up stays lean", () => {
  it("loads no chat library, LLM SDK, HTML parser, HTTP client or process runner until they are used", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "magpie-lean-"));
    writeFileSync(path.join(cwd, "hook.mjs"), HOOK);
    // An LLM is configured (the SDK must still wait for the first request); no chat channel is enabled.
    writeFileSync(path.join(cwd, "magpie.yaml"), "http:\n  port: 0\nllm:\n  apiKey: sk-test\n");
    const child = spawn(
      process.execPath,
      ["--import", pathToFileURL(path.join(cwd, "hook.mjs")).href, CLI, "start", "--config", "magpie.yaml"],
      { cwd, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
    );
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk) => (stderr += chunk));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready: ${stdout}${stderr}`)), 15_000);
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
        if (stdout.includes('"magpie-ready"')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGTERM");
    await exited;
    const loaded = new Set([...stderr.matchAll(/^PKG (\S+)$/gm)].map((match) => match[1]));
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
