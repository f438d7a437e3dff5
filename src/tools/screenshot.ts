import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { findProgram, requireDesktop } from "../browser/desktop.js";
import { defineTool, ToolError } from "./define-tool.js";
import { displayPath } from "./files/file-io.js";
import { ensureWorkspace, guardPath } from "./path-guard.js";

const CAPTURE_TIMEOUT_MS = 20_000;

/** A capture program and its arguments for writing the whole screen to `file`. */
interface Capturer {
  name: string;
  args(file: string): string[];
}

const CAPTURERS: Record<string, Capturer> = {
  screencapture: { name: "screencapture", args: (file) => ["-x", file] },
  grim: { name: "grim", args: (file) => [file] },
  import: { name: "import", args: (file) => ["-window", "root", file] },
  scrot: { name: "scrot", args: (file) => ["--overwrite", file] },
};

/** The capture programs to try, best first: grim only speaks Wayland, import and scrot only X11. */
function candidates(env: NodeJS.ProcessEnv): Capturer[] {
  if (process.platform === "darwin") return [CAPTURERS.screencapture!];
  const x11 = env.DISPLAY ? [CAPTURERS.import!, CAPTURERS.scrot!] : [];
  return env.WAYLAND_DISPLAY ? [CAPTURERS.grim!, ...x11] : x11;
}

/** `<name>.png` from the model's filename: one plain name, never a path. */
function screenshotName(filename: string | undefined): string {
  if (filename === undefined) return `screen-${new Date().toISOString().replace(/[:.]/g, "-")}.png`;
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(filename))
    throw new ToolError(
      "screenshot.invalid_filename",
      `filename must be a plain file name like 'desk.png' (letters, digits, . _ -; no directories), not ${JSON.stringify(filename)}.`,
    );
  return filename.toLowerCase().endsWith(".png") ? filename : `${filename}.png`;
}

export const screenshotTool = defineTool({
  name: "screenshot",
  description:
    "Take a screenshot of this machine's screen (the desktop, not a web page: use `browser` for pages) and save it as a PNG under screenshots/ in the workspace; returns the path (send it with `message`'s file).",
  inputSchema: z.object({
    filename: z
      .string()
      .min(1)
      .optional()
      .describe("A plain file name, e.g. 'desk.png' (default screen-<time>.png); saved under screenshots/."),
  }),
  // It can show whatever is on screen, including what is open in other windows.
  risk: "medium",
  isEnabled: (config) => config.screenshot.enabled,
  async execute(input, context) {
    const name = screenshotName(input.filename);
    requireDesktop("screenshot");
    const tried = candidates(process.env);
    const capturer = tried.find((candidate) => findProgram([candidate.name]) !== null);
    if (!capturer)
      throw new ToolError(
        "screenshot.no_capture_program",
        `No screen capture program found on the PATH (looked for ${tried.map((c) => c.name).join(", ")}). Install ImageMagick: sudo apt install imagemagick${process.env.WAYLAND_DISPLAY ? " (or grim on Wayland)" : ""}.`,
      );
    await ensureWorkspace(context);
    const resolved = await guardPath(context, `screenshots/${name}`, "write");
    await fs.mkdir(path.dirname(resolved.real), { recursive: true });
    const { execa } = await import("execa");
    const result = await execa(capturer.name, capturer.args(resolved.real), {
      reject: false,
      stdin: "ignore",
      timeout: CAPTURE_TIMEOUT_MS,
    });
    const stat = await fs.stat(resolved.real).catch(() => null);
    if (result.failed || !stat?.size)
      throw new ToolError(
        "screenshot.capture_failed",
        `${capturer.name} did not capture the screen${result.timedOut ? ` within ${CAPTURE_TIMEOUT_MS} ms` : ""}: ${
          String(result.stderr || result.shortMessage || "no image written")
            .trim()
            .split("\n")[0]
        }`,
      );
    return { ok: true, path: displayPath(context, resolved.real), bytes: stat.size, with: capturer.name };
  },
});
