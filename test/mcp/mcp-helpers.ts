import path from "node:path";
import type { MagpieApp } from "../../src/app/app.js";

/** The real reference server from npm (devDependency), run with this Node. */
export const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = path.resolve("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

/** An `mcpServers` entry that runs server-everything over stdio. */
export function everythingStdio(extra: Record<string, unknown> = {}) {
  return { command: process.execPath, args: [EVERYTHING, "stdio"], timeoutSecs: 20, ...extra };
}

/** Waits until `check` holds (polling), or fails with `what`. */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until the app's registry offers `tool`. */
export function waitForTool(app: MagpieApp, tool: string, timeoutMs?: number): Promise<void> {
  return waitFor(() => app.tools.get(tool) !== undefined, `tool ${tool}`, timeoutMs);
}
