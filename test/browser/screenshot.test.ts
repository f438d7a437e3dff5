import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { screenshotTool } from "../../src/tools/screenshot.js";
import { createRegistryHarness, type RegistryHarness } from "./registry-harness.js";

/** A 1×1 PNG, what the stub capture programs write. */
const TINY_PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe("screenshot (host screen through a stub ImageMagick `import` on the PATH)", () => {
  let harness: RegistryHarness;
  let stubDir: string;
  let argsFile: string;

  beforeAll(async () => {
    harness = await createRegistryHarness([screenshotTool as Tool], {
      screenshot: { enabled: true },
      security: { approvals: { require: [] } },
    });
    stubDir = path.join(harness.root, "bin");
    argsFile = path.join(harness.root, "import-args.txt");
    await fs.mkdir(stubDir);
    // Writes the PNG to its last argument, as `import -window root <file>` does.
    await fs.writeFile(
      path.join(stubDir, "import"),
      `#!/bin/sh\necho "$@" > '${argsFile}'\nfor last; do :; done\nprintf '%s' '${TINY_PNG}' | base64 -d > "$last"\n`,
      { mode: 0o755 },
    );
  });
  afterEach(() => vi.unstubAllEnvs());
  afterAll(() => harness.cleanup());

  const onX11 = (searchPath: string) => {
    vi.stubEnv("PATH", searchPath);
    vi.stubEnv("DISPLAY", ":0");
    vi.stubEnv("WAYLAND_DISPLAY", undefined);
  };

  it.skipIf(process.platform === "darwin")(
    "captures the root window into screenshots/ in the workspace",
    async () => {
      onX11(`${stubDir}${path.delimiter}${process.env.PATH ?? ""}`);
      const result = JSON.parse(await harness.call("screenshot", { filename: "desk" }));
      expect(result).toMatchObject({ ok: true, path: "screenshots/desk.png", with: "import" });
      const image = await fs.readFile(path.join(harness.workspace, "screenshots", "desk.png"));
      expect(image.subarray(0, 8)).toEqual(PNG_SIGNATURE);
      expect(result.bytes).toBe(image.length);
      expect(await fs.readFile(argsFile, "utf8")).toMatch(/^-window root .*\/screenshots\/desk\.png\n$/);

      const unnamed = JSON.parse(await harness.call("screenshot", {}));
      expect(unnamed.path).toMatch(/^screenshots\/screen-\d{4}-.*\.png$/);
    },
  );

  it("refuses a filename with directories", async () => {
    onX11(stubDir);
    for (const filename of ["../escape.png", "sub/dir.png", "/etc/x.png", ".hidden"]) {
      const result = JSON.parse(await harness.call("screenshot", { filename }));
      expect(result.error?.code, filename).toBe("screenshot.invalid_filename");
    }
  });

  it.skipIf(process.platform === "darwin")(
    "names what is missing: the display, then the capture program",
    async () => {
      onX11(stubDir);
      vi.stubEnv("DISPLAY", undefined);
      const noDisplay = JSON.parse(await harness.call("screenshot", {}));
      expect(noDisplay.error.code).toBe("screenshot.no_display");
      expect(noDisplay.error.message).toMatch(/DISPLAY nor WAYLAND_DISPLAY/);

      onX11(path.join(harness.root, "empty"));
      const noProgram = JSON.parse(await harness.call("screenshot", {}));
      expect(noProgram.error.code).toBe("screenshot.no_capture_program");
      expect(noProgram.error.message).toMatch(/sudo apt install imagemagick/);
    },
  );

  it("is off by default", () => {
    const config = parseConfig({}, { env: {}, cwd: "/tmp", sourcePath: null, envFiles: [] });
    expect(config.screenshot).toEqual({ enabled: false });
    expect(screenshotTool.isEnabled?.(config)).toBe(false);
  });
});
