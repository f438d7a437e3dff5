/**
 * Output filter benchmark (issue 36 item 3): how long the check of one outbound value takes in a tainted turn —
 * a 4 KB message and a 1 MB request body (base64, the shape of an exfiltration) and 1 MB of prose — against a
 * redactor with 40 secrets and 1,000 private memories of ~300 characters. Wall and CPU time, median of 7 runs;
 * the first check (which builds the secret matcher and the memory index) is reported on its own.
 */
import { randomBytes } from "node:crypto";
import { Redactor } from "../src/log/redact.js";
import { checkOutbound, type OutboundContext, type OutboundKind } from "../src/security/output-filter.js";

const RUNS = 7;
const WORDS = "The quick brown fox jumps over the lazy dog near the river bank, then naps. ";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function measure(run: () => unknown): { wall: number; cpu: number } {
  const cpu = process.cpuUsage();
  const started = performance.now();
  run();
  const used = process.cpuUsage(cpu);
  return { wall: performance.now() - started, cpu: (used.user + used.system) / 1000 };
}

export async function run(): Promise<void> {
  const context: OutboundContext = {
    tainted: true,
    secrets: new Redactor().add(...Array.from({ length: 40 }, () => randomBytes(24).toString("base64url"))),
    privateMemories: () =>
      Array.from({ length: 1_000 }, (_, i) => `${WORDS.slice(i % 20)}${i} `.repeat(4).slice(0, 300)),
  };
  const cases: Array<{ name: string; kind: OutboundKind; value: string }> = [
    { name: "4 KB message", kind: "message", value: WORDS.repeat(60).slice(0, 4096) },
    {
      name: "1 MB body (base64)",
      kind: "body",
      value: `{"d":"${randomBytes(786_000).toString("base64")}"}`.slice(0, 1 << 20),
    },
    { name: "1 MB body (prose)", kind: "body", value: WORDS.repeat(14_000).slice(0, 1 << 20) },
  ];
  const first = measure(() => checkOutbound("message", "hello", context));
  console.log(`first check (builds matcher and index): ${first.wall.toFixed(1)} ms wall\n`);
  console.log("| value | wall p50 | CPU p50 |");
  console.log("|---|---:|---:|");
  for (const { name, kind, value } of cases) {
    const samples = Array.from({ length: RUNS }, () => measure(() => checkOutbound(kind, value, context)));
    console.log(
      `| ${name} | ${median(samples.map((s) => s.wall)).toFixed(1)} ms | ${median(samples.map((s) => s.cpu)).toFixed(1)} ms |`,
    );
  }
}
