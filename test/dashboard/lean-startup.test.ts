import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const CLI = path.resolve("dist/src/cli/main.js");

/** Reports every dashboard or webchat module the process loads, one `MOD <url>` line on stderr. */
const HOOK = `
import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(\`
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (/\\\\/(src\\\\/dashboard|channels\\\\/web\\\\.js|node_modules\\\\/htmx\\\\.org)/.test(result.url)) {
    process.stderr.write("MOD " + result.url + "\\\\n");
  }
  return result;
}\`));
`;

async function startAndStop(yaml: string): Promise<{ modules: string[]; stdout: string }> {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-dashboard-lean-"));
  writeFileSync(path.join(cwd, "hook.mjs"), HOOK);
  writeFileSync(path.join(cwd, "magpie.yaml"), yaml);
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
  return { modules: [...stderr.matchAll(/^MOD (\S+)$/gm)].map((match) => match[1]!), stdout };
}

describe("the dashboard costs nothing while disabled", () => {
  it("loads no dashboard or webchat module unless http.dashboard.enabled", async () => {
    const off = await startAndStop("http:\n  port: 0\n");
    expect(off.modules).toEqual([]);
    const on = await startAndStop(
      "http:\n  port: 0\n  dashboard:\n    enabled: true\n    token: lean-test-token-0123456789\n",
    );
    // The hook sees them when they load: the check above is not vacuous.
    expect(on.modules.some((url) => url.includes("/src/dashboard/"))).toBe(true);
    expect(on.modules.some((url) => url.includes("channels/web.js"))).toBe(true);
    expect(on.stdout).toContain('"web"');
  }, 40_000);
});
