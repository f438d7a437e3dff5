import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { browserOpenTool } from "../../src/tools/browser-open.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { createRegistryHarness, type RegistryHarness } from "./registry-harness.js";

describe("browser_open (desktop browser through a stub xdg-open on the PATH)", () => {
  let harness: RegistryHarness;
  let stubDir: string;
  let record: string;

  beforeAll(async () => {
    harness = await createRegistryHarness([browserOpenTool as Tool], {
      browser: { allowedDomains: ["example.com"] },
      security: { approvals: { require: [] } },
    });
    stubDir = path.join(harness.root, "bin");
    record = path.join(harness.root, "opened.txt");
    await fs.mkdir(stubDir);
    for (const name of ["xdg-open", "open"])
      await fs.writeFile(path.join(stubDir, name), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${record}'\n`, {
        mode: 0o755,
      });
  });
  afterEach(() => vi.unstubAllEnvs());
  afterAll(() => harness.cleanup());

  const withDesktop = () => {
    vi.stubEnv("PATH", `${stubDir}${path.delimiter}${process.env.PATH ?? ""}`);
    vi.stubEnv("DISPLAY", ":0");
  };
  const opened = () => fs.readFile(record, "utf8").catch(() => "");

  it("opens a listed host (and its subdomain) with the desktop's opener", async () => {
    withDesktop();
    const result = JSON.parse(await harness.call("browser_open", { url: "https://example.com/a?b=1" }));
    expect(result).toMatchObject({ ok: true, opened: "https://example.com/a?b=1" });
    await harness.call("browser_open", { url: "https://docs.example.com/" });
    expect(await opened()).toBe("https://example.com/a?b=1\nhttps://docs.example.com/\n");
  });

  it("refuses http, hosts not listed and look-alike hosts without running the opener", async () => {
    withDesktop();
    const before = await opened();
    for (const [url, code] of [
      ["http://example.com/", "browser_open.https_only"],
      ["https://evil.com/", "browser_open.domain_not_allowed"],
      ["https://notexample.com/", "browser_open.domain_not_allowed"],
      ["https://example.com.evil.com/", "browser_open.domain_not_allowed"],
      ["file:///etc/passwd", "browser_open.https_only"],
    ] as const) {
      const result = JSON.parse(await harness.call("browser_open", { url }));
      expect(result.ok, url).toBe(false);
      expect(result.error.code, url).toBe(code);
    }
    expect(await opened()).toBe(before);
  });

  it("says there is no desktop when neither DISPLAY nor WAYLAND_DISPLAY is set", async () => {
    if (process.platform === "darwin") return; // a Mac always has one
    withDesktop();
    vi.stubEnv("DISPLAY", undefined);
    vi.stubEnv("WAYLAND_DISPLAY", undefined);
    const result = JSON.parse(await harness.call("browser_open", { url: "https://example.com/" }));
    expect(result.error.code).toBe("browser_open.no_display");
    expect(result.error.message).toMatch(/DISPLAY nor WAYLAND_DISPLAY/);
  });

  it("says which opener is missing", async () => {
    vi.stubEnv("PATH", path.join(harness.root, "empty"));
    vi.stubEnv("DISPLAY", ":0");
    const result = JSON.parse(await harness.call("browser_open", { url: "https://example.com/" }));
    expect(result.error.code).toBe("browser_open.no_opener");
  });

  it("is offered only when browser.allowedDomains lists a host; a URL in the list is refused", () => {
    const parse = (browser: Record<string, unknown>) =>
      parseConfig({ browser }, { env: {}, cwd: "/tmp", sourcePath: null, envFiles: [] });
    expect(browserOpenTool.isEnabled?.(parse({}))).toBe(false);
    expect(browserOpenTool.isEnabled?.(parse({ allowedDomains: ["github.com"] }))).toBe(true);
    expect(() => parse({ allowedDomains: ["https://github.com/"] })).toThrow(/host name/);
  });
});
