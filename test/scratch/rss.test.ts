import { readdirSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram.js";
import { parseExposition, sumOf } from "../http/metrics-exposition.js";
import { ShippedBot } from "../shipped/shipped-bot.js";
import { SoakLlm } from "../soak/soak-llm.js";
import { MAGPIE_NODE_ARGS } from "../helpers/cli-path.js";

const USERS = Array.from({ length: 8 }, (_, index) => 7_100 + index);
function pidOf(configFile: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try { if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(configFile)) return Number(entry); } catch {}
  }
  throw new Error("no pid");
}
function mem(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const get = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: get("VmRSS").toFixed(0), anon: get("RssAnon").toFixed(0), file: get("RssFile").toFixed(0), shm: get("RssShmem").toFixed(0), threads: get("Threads") * 1024 };
}
it("rss", async () => {
  if (process.env.V8FLAGS) MAGPIE_NODE_ARGS.unshift(...process.env.V8FLAGS.split(" "));
  const telegram = await new FakeTelegram().start();
  const llm = await new SoakLlm().start();
  const bot = await ShippedBot.start({
    env: process.env.ARENA ? { MALLOC_ARENA_MAX: process.env.ARENA } : {},
    config: {
      llm: { baseUrl: llm.url, apiKey: "sk-soak", model: "soak-model" },
      agent: { streaming: false, historyTokens: 1_500 },
      channels: { telegram: { token: telegram.validToken, apiRoot: telegram.apiRoot, pacing: false, allowFrom: USERS } },
      http: { metrics: { enabled: true } },
      cron: { jobs: [
        { name: "reminder", expression: "*/5 * * * * *", message: "stretch", deliver: { channel: "telegram", chatId: String(USERS[0]), mode: "always" } },
        { name: "digest", expression: "*/10 * * * * *", prompt: "summarise m0", deliver: { mode: "none" } },
      ] },
    },
  });
  const pid = pidOf(bot.configFile);
  const metrics = async () => {
    const { samples } = parseExposition(await (await fetch(`${bot.url}/metrics`)).text());
    const g = (n: string) => ((samples.get(n) ?? 0) / 1048576).toFixed(1);
    const spaces: Record<string, string> = {};
    for (const [key, value] of samples) { const m = /^nodejs_heap_space_size_total_bytes\{space="(\w+)"\}/.exec(key); if (m && value > 1048576) spaces[m[1]!] = (value / 1048576).toFixed(0); }
    return { spaces: JSON.stringify(spaces), msgs: sumOf(samples, "magpie_messages_total"), heapUsed: g("nodejs_heap_size_used_bytes"), heapTotal: g("nodejs_heap_size_total_bytes"), external: g("nodejs_external_memory_bytes") };
  };
  const log = async (label: string) => console.log(label, JSON.stringify({ ...mem(pid), ...(await metrics()) }));
  for (let i = 0; i < 6; i++) { await log(`idle ${i * 5}s`); await new Promise((r) => setTimeout(r, 5000)); }
  let sent = 0; const begin = Date.now(); let next = 0;
  while (Date.now() - begin < Number(process.env.LOAD_S ?? 90) * 1000) {
    if (Date.now() - begin > next) { await log(`load ${Math.round((Date.now() - begin) / 1000)}s`); next += 10_000; telegram.calls.length = 0; bot.logLines.length = 0; }
    const done = (await metrics()).msgs;
    if (sent - done >= 12) { await new Promise((r) => setTimeout(r, 50)); continue; }
    const user = USERS[sent % 8]!; const roll = (sent * 7919) % 10;
    sent++;
    telegram.pushMessage({ chat: { id: user, type: "private" }, from: { id: user }, text: `${roll < 4 ? "tool:list" : roll < 7 ? "tool:mem" : "hello"} m${sent}` });
  }
  await log("end");
  { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); const cpu = (Number(f[11]) + Number(f[12])) * 10; const m = await metrics(); console.log("end cpu/msg", (cpu / m.msgs).toFixed(2), "ms", m.msgs); }
  const smaps = readFileSync(`/proc/${pid}/smaps`, "utf8");
  // biggest mappings by Rss
  const maps: Array<[string, number]> = []; let current = "";
  for (const line of smaps.split("\n")) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) current = line;
    const m = /^Rss:\s+(\d+) kB/.exec(line); if (m) maps.push([current, Number(m[1])]);
  }
  maps.sort((a, b) => b[1] - a[1]);
  for (const [name, kb] of maps.slice(0, 15)) console.log((kb / 1024).toFixed(1), name);
  await bot.dispose(); await llm.close(); await telegram.close();
  expect(sent).toBeGreaterThan(0);
}, 300_000);
