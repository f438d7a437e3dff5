/**
 * Sandbox overhead: median wall time of `sh -c true` run directly and through bubblewrap (as `shell` runs it),
 * plus the one-time start-up probe. Target: ≤ 15 ms per command.
 */
import { parseConfig } from "../src/config/load.js";
import { probeSandbox, sandboxPlan } from "../src/security/sandbox.js";
import { sanitizedEnv } from "../src/security/shell-env.js";
import { runProcess } from "../src/tools/process/run-process.js";

const RUNS = Number(process.env.BENCH_SANDBOX_RUNS ?? 50);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function timeCommand(sandbox: ReturnType<typeof sandboxPlan> | undefined): Promise<number[]> {
  const times: number[] = [];
  for (let index = 0; index < RUNS + 3; index++) {
    const started = performance.now();
    const result = await runProcess({
      file: "/bin/sh",
      args: ["-c", "true"],
      cwd: "/tmp",
      env: sanitizedEnv(),
      timeoutMs: 10_000,
      maxOutputBytes: 1024,
      sandbox,
    });
    if (result.exitCode !== 0) throw new Error(`sh -c true failed: ${result.stderr}`);
    if (index >= 3) times.push(performance.now() - started);
  }
  return times;
}

export async function run(): Promise<void> {
  const probe = await probeSandbox();
  console.log(
    `\`sh -c true\` through runProcess, ${RUNS} runs each (after 3 warm-ups), node ${process.version}\n`,
  );
  console.log("| measurement | median | min–max |");
  console.log("|---|---|---|");
  console.log(`| start-up probe (once, cached) | ${probe.durationMs.toFixed(1)} ms | — |`);
  const direct = await timeCommand(undefined);
  const row = (name: string, times: number[]) =>
    console.log(
      `| ${name} | ${median(times).toFixed(1)} ms | ${Math.min(...times).toFixed(1)}–${Math.max(...times).toFixed(1)} ms |`,
    );
  row("direct", direct);
  if (!probe.available) {
    console.log(`| sandboxed | skipped: ${probe.detail} | — |`);
    return;
  }
  const config = parseConfig({}, { env: {}, cwd: "/tmp" });
  const sandboxed = await timeCommand(sandboxPlan(config));
  const offline = await timeCommand(
    sandboxPlan({ ...config, tools: { ...config.tools, shell: { ...config.tools.shell, network: false } } }),
  );
  row("bubblewrap sandbox", sandboxed);
  row("bubblewrap sandbox, network: false", offline);
  const overhead = median(sandboxed) - median(direct);
  console.log(
    `\nSandbox overhead per command: ${overhead.toFixed(1)} ms (target ≤ 15 ms${overhead <= 15 ? ", met" : ", MISSED"}).`,
  );
}
