import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const CLI = path.resolve("dist/src/cli/main.js");

/** A module-resolve hook that reports every module URL the process resolves, one `MOD <url>` line on stderr. */
const HOOK = `
import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(\`
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  process.stderr.write("MOD " + result.url + "\\\\n");
  return result;
}\`));
`;

/**
 * Starts the built CLI with `yaml` as its config, waits until it is ready, stops it, and returns every module URL
 * it loaded on the way (for tests that start-up stays lean), and what it logged.
 */
export async function modulesLoadedAtStart(
  yaml: string,
): Promise<{ urls: string[]; packages: Set<string>; stdout: string }> {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-lean-"));
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
    const timer = setTimeout(() => reject(new Error(`not ready: ${stdout}${stderr.slice(-2000)}`)), 15_000);
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
  const urls = [...stderr.matchAll(/^MOD (\S+)$/gm)].map((match) => match[1]!);
  const packages = new Set(
    urls.flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.slice(1, 2) ?? []),
  );
  return { urls, packages, stdout };
}
