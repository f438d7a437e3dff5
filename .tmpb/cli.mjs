import { spawn } from "node:child_process";
import { request, Agent } from "undici";
const child = spawn(process.execPath, [new URL("./srv.mjs", import.meta.url).pathname]);
const port = await new Promise((r) => child.stdout.once("data", (d) => r(Number(String(d).trim()))));
const agent = new Agent();
for (const size of [120, 40000, 120, 40000]) {
  const body = Buffer.alloc(size, 97);
  const t = []; const cpu = process.cpuUsage();
  for (let i = 0; i < 2000; i++) { const a = process.hrtime.bigint(); const r = await request(`http://127.0.0.1:${port}/x`, { method: "POST", body, dispatcher: agent, headers: { "content-type": "application/json" } }); await r.body.text(); t.push(Number(process.hrtime.bigint() - a) / 1000); }
  const c = process.cpuUsage(cpu); const s = t.slice(200).sort((x, y) => x - y);
  console.log(size, "round trip median µs", s[s.length >> 1].toFixed(0), "client CPU µs/req", ((c.user + c.system) / 2000).toFixed(0), "sys", (c.system / 2000).toFixed(0));
}
child.kill();
