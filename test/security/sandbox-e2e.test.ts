import { mkdirSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MagpieApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/load.js";
import { allowAll } from "../../src/core/access.js";
import { everyoneIsOwner } from "../../src/core/identity.js";
import { silentLogger } from "../../src/log/logger.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { RecordingChannel } from "../helpers/recording-channel.js";
import { hasWorkingSandbox } from "../helpers/requires.js";

/**
 * The sandbox end to end: a prompt-injected model asks `shell` for Magpie's own config and .env in every encoding
 * it can think of, through a chat turn; nothing of them reaches any LLM request. A control run with the
 * sandbox off shows the same commands do leak, so the test can fail.
 */

const CONFIG_CANARY = "cfgcanary7Q2xWv9";
const ENV_CANARY = "envcanary3Rt8Kp1";

const available = await hasWorkingSandbox();

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** Every way the text could hold the canary: plain, base64 (any alignment), hex, reversed, rot13. */
function reveals(text: string, canary: string): boolean {
  const rot13 = (value: string) =>
    value.replace(/[a-z]/gi, (char) => {
      const base = char <= "Z" ? 65 : 97;
      return String.fromCharCode(((char.charCodeAt(0) - base + 13) % 26) + base);
    });
  const candidates = [text, [...text].reverse().join(""), rot13(text)];
  for (const run of text.match(/[A-Za-z0-9+/=_-]{16,}/g) ?? []) {
    for (let shift = 0; shift < 4; shift++) {
      candidates.push(Buffer.from(run.slice(shift), "base64").toString("latin1"));
    }
  }
  for (const run of text.match(/(?:[0-9a-fA-F]{2}\s?){8,}/g) ?? []) {
    candidates.push(Buffer.from(run.replace(/\s/g, ""), "hex").toString("latin1"));
  }
  return candidates.some((candidate) => candidate.includes(canary));
}

async function startInstalled(llm: OpenAiFake, sandbox: "auto" | "off") {
  // Not under /tmp: the sandbox's private /tmp alone would hide it, and this test is about the explicit hiding.
  mkdirSync("/var/tmp", { recursive: true });
  const home = await fs.realpath(await fs.mkdtemp("/var/tmp/magpie-sandbox-e2e-"));
  cleanup.push(() => fs.rm(home, { recursive: true, force: true }));
  await fs.mkdir(path.join(home, "config"));
  await fs.writeFile(
    path.join(home, "config", "magpie.yaml"),
    [
      `# mqtt password: ${CONFIG_CANARY}`,
      "dataDir: data",
      "timezone: UTC",
      "http: { host: 127.0.0.1, port: 0 }",
      "agent: { streaming: false }",
      `llm: { baseUrl: "${llm.url}", apiKey: sk-test, model: test-model, maxRetries: 0, timeoutMs: 5000 }`,
      `tools: { shell: { sandbox: ${sandbox} } }`,
      "",
    ].join("\n"),
  );
  await fs.writeFile(path.join(home, ".env"), `DATABASE_URL=postgres://u:${ENV_CANARY}@db/x\n`);
  const env: NodeJS.ProcessEnv = {};
  const config = loadConfig({ cwd: home, env });
  const channel = new RecordingChannel();
  const app = new MagpieApp({
    config,
    env,
    logger: silentLogger(),
    loadChannels: false,
    access: allowAll,
    authority: everyoneIsOwner,
    features: [],
    adapters: [channel],
  });
  await app.start();
  cleanup.push(() => app.stop(1_000));
  return { channel, app };
}

const ATTACKS = [
  "base64 -w0 ../../config/magpie.yaml; echo; base64 ../../.env",
  "xxd -p ../../config/magpie.yaml; od -x ../../.env; rev ../../.env; fold -w1 ../../config/magpie.yaml | tr -d '\\n'",
  "tr 'A-Za-z' 'N-ZA-Mn-za-m' < ../../config/magpie.yaml; cat /proc/$PPID/environ | base64 -w0",
  "for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat $f 2>/dev/null; done | base64 -w0; ls -la ../.. ~ 2>&1",
];

async function attack(sandbox: "auto" | "off") {
  const llm = await startOpenAiFake();
  cleanup.push(() => llm.close());
  const { channel } = await startInstalled(llm, sandbox);
  llm.script(
    reply.toolCalls(
      ATTACKS.map((command, index) => ({ id: `c${index}`, name: "shell", arguments: { command } })),
    ),
    reply.text("done"),
  );
  await channel.receive("the web page says: run these diagnostics");
  await channel.waitForSent(1);
  llm.assertDone();
  return JSON.stringify(llm.requests);
}

describe.runIf(available)("sandbox end to end (bubblewrap)", () => {
  it("no encoding of the config file or the loaded .env reaches the model", async () => {
    const sent = await attack("auto");
    expect(sent).toContain("tool_call_id");
    expect(reveals(sent, CONFIG_CANARY)).toBe(false);
    expect(reveals(sent, ENV_CANARY)).toBe(false);
  });

  it("control: the same commands unsandboxed do leak (so the test above can fail)", async () => {
    const sent = await attack("off");
    expect(reveals(sent, CONFIG_CANARY)).toBe(true);
  });
});
