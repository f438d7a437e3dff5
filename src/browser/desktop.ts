import { ToolError } from "../core/tool-error.js";
import { findOnPath } from "./find-chromium.js";

/** Whether this process can reach a graphical session: always on macOS, else DISPLAY or WAYLAND_DISPLAY. */
export function hasDesktop(env: NodeJS.ProcessEnv = process.env, platform = process.platform): boolean {
  if (platform === "darwin") return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Throws `<tool>.no_display` when there is no graphical session to act on. */
export function requireDesktop(tool: string, env: NodeJS.ProcessEnv = process.env): void {
  if (hasDesktop(env)) return;
  throw new ToolError(
    `${tool}.no_display`,
    `${tool} needs a desktop, and this machine has none (neither DISPLAY nor WAYLAND_DISPLAY is set: Magpie runs headless or as a service outside the desktop session).`,
  );
}

/** The first of `names` on the PATH, or null. */
export function findProgram(names: readonly string[], env: NodeJS.ProcessEnv = process.env): string | null {
  return findOnPath(names, env.PATH ?? "");
}
