import { mkdtempSync, realpathSync } from "node:fs";
import fs from "node:fs/promises";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { ownerIdentity } from "../../src/core/identity.js";
import { silentLogger } from "../../src/log/logger.js";
import { Redactor } from "../../src/log/redact.js";
import type { Job } from "../../src/scheduler/job.js";
import { createJobExecutor } from "../../src/scheduler/job-executor.js";
import { installDir } from "../../src/security/magpie-state.js";
import {
  probeSandbox,
  requireSandboxStatus,
  SandboxUnavailableError,
  sandboxArgv,
  sandboxStatus,
} from "../../src/security/sandbox.js";
import { Store } from "../../src/store/index.js";
import type { Tool } from "../../src/tools/define-tool.js";
import { builtinTools } from "../../src/tools/index.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { hasPrograms, hasWorkingSandbox } from "../helpers/requires.js";

const probe = await probeSandbox();
const sandboxWorks = await hasWorkingSandbox();

// Distinct canaries under ordinary names: the bot's environment, a loaded .env, mcpServers.*.env in the config.
const CANARIES = {
  env: "hunter2-canary-env",
  dotenv: "hunter2-canary-dotenv",
  yaml: "hunter2-canary-yaml",
  aws: "hunter2-canary-aws",
  database: "hunter2-canary-db",
};
const ALL_CANARIES = Object.values(CANARIES);

const rot13 = (text: string) =>
  text.replace(/[A-Za-z]/g, (letter) => {
    const base = letter <= "Z" ? 65 : 97;
    return String.fromCharCode(((letter.charCodeAt(0) - base + 13) % 26) + base);
  });

/** `od -x` prints little-endian 16-bit words after an offset column. */
function decodeOdX(output: string): string {
  const bytes: number[] = [];
  for (const line of output.split("\n")) {
    for (const word of line.trim().split(/\s+/).slice(1)) {
      if (!/^[0-9a-f]{4}$/.test(word)) continue;
      const value = Number.parseInt(word, 16);
      bytes.push(value & 0xff, value >> 8);
    }
  }
  return Buffer.from(bytes).toString("latin1");
}

/** Every way the output could carry a canary: verbatim, folded, reversed, rot13, base64, hex (xxd -p, od -x). */
function revealed(output: string): string[] {
  const compact = output.replace(/\s+/g, "");
  const views = [
    output,
    compact,
    [...compact].reverse().join(""),
    rot13(output),
    Buffer.from(compact, "base64").toString("latin1"),
    Buffer.from(compact.replace(/[^0-9a-f]/gi, ""), "hex").toString("latin1"),
    decodeOdX(output),
  ];
  const found = new Set<string>();
  for (const canary of ALL_CANARIES) {
    const encoded = [
      canary,
      [...canary].reverse().join(""),
      Buffer.from(canary).toString("hex"),
      // base64 of the canary at each of the three alignments, minus the edge characters that depend on neighbours.
      ...[0, 1, 2].map((shift) => {
        const text = Buffer.from("x".repeat(shift) + canary).toString("base64");
        return text.slice(Math.ceil((shift * 4) / 3) + 1, -4);
      }),
    ];
    if (views.some((view) => view.includes(canary)) || encoded.some((form) => compact.includes(form)))
      found.add(canary);
  }
  return [...found];
}

interface Deployment {
  root: string;
  config: MagpieConfig;
  configFile: string;
  envFile: string;
  database: string;
  home: string;
  outside: string;
  registry: ToolRegistry;
  shell(command: string): Promise<{ exit_code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

const deployments: Deployment[] = [];
const savedHome = process.env.HOME;
afterEach(async () => {
  await Promise.all(deployments.splice(0).map((deployment) => deployment.close()));
  process.env.HOME = savedHome;
  delete process.env.MQTT_PASS;
});

/**
 * A deployment laid out like a real one, outside /tmp (so hiding /tmp alone can't pass these tests): config
 * file and .env in the bot's directory, the database in dataDir, the workspace inside dataDir, a home with
 * ~/.aws/credentials. The bot's own environment holds a password under an ordinary name.
 */
async function deploy(shellSettings: Record<string, unknown> = {}): Promise<Deployment> {
  const root = realpathSync(mkdtempSync("/var/tmp/magpie-sandbox-"));
  const home = path.join(root, "home");
  const outside = path.join(root, "outside");
  await fs.mkdir(path.join(home, ".aws"), { recursive: true });
  await fs.mkdir(outside);
  await fs.mkdir(path.join(root, "data", "workspace"), { recursive: true });
  await fs.writeFile(path.join(home, ".aws", "credentials"), `aws_secret_access_key = ${CANARIES.aws}\n`);
  const configFile = path.join(root, "magpie.yaml");
  await fs.writeFile(
    configFile,
    [
      "dataDir: ./data",
      "mcpServers:",
      "  x:",
      "    command: /bin/true",
      `    env: { MQTT_PASS: ${CANARIES.yaml} }`,
      "tools:",
      "  shell:",
      ...Object.entries(shellSettings).map(([key, value]) => `    ${key}: ${JSON.stringify(value)}`),
      "",
    ].join("\n"),
  );
  const envFile = path.join(root, ".env");
  await fs.writeFile(envFile, `MQTT_PASS_DOTENV=${CANARIES.dotenv}\n`);
  const database = path.join(root, "data", "magpie.db");
  await fs.writeFile(database, `SQLite format 3\0 ${CANARIES.database}`);
  const config = loadConfig({ cwd: root, env: { HOME: home }, configPath: "magpie.yaml" });
  expect(config.envFiles).toEqual([envFile]);
  expect(config.sourcePath).toBe(configFile);
  process.env.HOME = home;
  process.env.MQTT_PASS = CANARIES.env;

  const store = Store.open(":memory:");
  const registry = new ToolRegistry({
    config,
    logger: silentLogger(),
    services: { store, redactor: new Redactor(), homeDir: home },
    approvals: { request: async () => "approved" },
  });
  registry.register(...(builtinTools.filter((tool) => tool.name === "shell") as Tool[]));
  let callId = 0;
  const deployment: Deployment = {
    root,
    config,
    configFile,
    envFile,
    database,
    home,
    outside,
    registry,
    async shell(command) {
      const text = await registry.execute(
        {
          id: `call-${++callId}`,
          type: "function",
          function: { name: "shell", arguments: JSON.stringify({ command }) },
        },
        ["shell"],
        {
          sessionKey: "test:chat",
          agent: "main",
          target: { channel: "test", chatId: "chat" },
          userId: "owner",
          signal: new AbortController().signal,
          depth: 0,
          origin: "user",
          sender: ownerIdentity("test"),
          canAsk: true,
        },
      );
      const parsed = JSON.parse(text);
      if (parsed.ok === false) throw new Error(`shell failed: ${text}`);
      return parsed;
    },
    close: async () => {
      store.close();
      await fs.rm(root, { recursive: true, force: true });
    },
  };
  deployments.push(deployment);
  return deployment;
}

function attacks(deployment: Deployment): string[] {
  const targets = [
    deployment.configFile,
    deployment.envFile,
    `/proc/${process.pid}/environ`,
    "/proc/$PPID/environ",
    "/proc/1/environ",
    deployment.database,
    path.join(deployment.home, ".aws/credentials"),
    "~/.aws/credentials",
  ];
  return targets.flatMap((target) => [
    `cat ${target}`,
    `base64 ${target}`,
    `xxd ${target}`,
    `xxd -p ${target}`,
    `od -x ${target}`,
    `rev ${target}`,
    `fold -w1 ${target}`,
    `tr 'A-Za-z' 'N-ZA-Mn-za-m' < ${target}`,
  ]);
}

describe("sandbox control: without it the attacks are real", () => {
  it("unsandboxed, the encodings of the config file, .env and /proc/$PPID/environ carry the canaries", async () => {
    const deployment = await deploy({ sandbox: "off" });
    const leaked = new Set<string>();
    for (const command of attacks(deployment)) {
      const result = await deployment.shell(command);
      for (const canary of revealed(result.stdout)) leaked.add(canary);
    }
    expect([...leaked].sort()).toEqual([...ALL_CANARIES].sort());
  });
});

describe.runIf(sandboxWorks)("sandbox: the agent's shell can't reach Magpie's secrets", () => {
  it("base64, hex, rev, fold and rot13 of config, .env, database, ~/.aws and /proc/*/environ reveal nothing", async () => {
    const deployment = await deploy();
    for (const command of attacks(deployment)) {
      const result = await deployment.shell(command);
      expect(revealed(`${result.stdout}\n${result.stderr}`), command).toEqual([]);
    }
  });

  it("env, ps and /proc show neither the bot's process nor its environment", async () => {
    const deployment = await deploy();
    const result = await deployment.shell(
      `env; ps -eo pid,args 2>/dev/null || ls /proc; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; ls /proc/${process.pid} 2>&1`,
    );
    expect(revealed(result.stdout)).toEqual([]);
    expect(result.stdout).toContain(`/proc/${process.pid}': No such file`);
    expect(result.stdout).not.toMatch(/vitest/);
  });

  it("Magpie's state is invisible: config, .env, database, install dir; the real home is empty", async () => {
    const deployment = await deploy();
    const listing = await deployment.shell(
      `ls -A ${deployment.root}; echo ---; ls -A ${path.join(deployment.root, "data")}; echo ---; ls -A ${installDir()}; echo ---; ls -A ~; echo ---; ls -A ${deployment.home}`,
    );
    const [rootDir, dataDir, install, home, homeByPath] = listing.stdout.split("---\n");
    // Protected files are covered by /dev/null: their names show, their contents don't.
    expect(rootDir).toContain("outside");
    expect(dataDir?.trim()).toBe("workspace");
    expect(install?.trim()).toBe("");
    expect(home?.trim()).toBe("");
    expect(homeByPath?.trim()).toBe("");
    const sizes = await deployment.shell(`cat ${deployment.configFile} ${deployment.envFile} | wc -c`);
    expect(sizes.stdout.trim()).toBe("0");
    const databaseRead = await deployment.shell(`cat ${deployment.database}`);
    expect(databaseRead.exit_code).not.toBe(0);
  });

  it("the workspace is writable (also inside dataDir), the rest read-only, /tmp private", async () => {
    const deployment = await deploy();
    const hostTmp = `/tmp/magpie-sandbox-host-${process.pid}`;
    await fs.writeFile(hostTmp, "host file\n");
    try {
      const result = await deployment.shell(
        [
          "echo made > made.txt && cat made.txt",
          `cat ${hostTmp} 2>&1 || echo tmp-hidden`,
          "echo inside > /tmp/inside.txt && cat /tmp/inside.txt",
          `touch ${path.join(deployment.outside, "pwned")} 2>&1 || echo outside-read-only`,
          `touch ${path.join(deployment.root, "data", "pwned")} 2>&1; echo data-write-done`,
        ].join("; "),
      );
      expect(result.stdout).toContain("made\n");
      expect(result.stdout).toContain("tmp-hidden");
      expect(result.stdout).toContain("inside\n");
      expect(result.stdout).toContain("outside-read-only");
      expect(await fs.readFile(path.join(deployment.config.workspace, "made.txt"), "utf8")).toBe("made\n");
      await expect(fs.access("/tmp/inside.txt")).rejects.toThrow();
      expect(await fs.readdir(deployment.outside)).toEqual([]);
      // data/ is an empty tmpfs inside: a file made there never reaches the real dataDir.
      await expect(fs.access(path.join(deployment.root, "data", "pwned"))).rejects.toThrow();
    } finally {
      await fs.rm(hostTmp, { force: true });
    }
  });

  it("Magpie state inside the workspace (a .env loaded from there) stays hidden; the workspace around it does not", async () => {
    const deployment = await deploy();
    const plan = {
      network: true,
      hidden: [path.join(deployment.config.workspace, "secret.env")],
      homes: [],
      exposed: [deployment.config.workspace],
    };
    await fs.writeFile(path.join(deployment.config.workspace, "secret.env"), "x");
    const argv = sandboxArgv(plan, deployment.config.workspace, ["true"]);
    const bind = argv.indexOf("--bind");
    const hide = argv.lastIndexOf("/dev/null");
    expect(bind).toBeGreaterThan(-1);
    expect(hide).toBeGreaterThan(bind);
  });

  describe.runIf(hasPrograms("socat"))("network", () => {
    let server: Server;
    let connections = 0;
    let port = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections += 1;
        socket.end("hello\n");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("tools.shell.network: false cuts the network; the default keeps it", async () => {
      const connect = `socat -T2 - TCP:127.0.0.1:${port},connect-timeout=2 </dev/null`;
      const cut = await deploy({ network: false });
      const refused = await cut.shell(connect);
      expect(refused.exit_code).not.toBe(0);
      expect(connections).toBe(0);
      const open = await deploy();
      const reached = await open.shell(connect);
      expect(reached.stdout).toBe("hello\n");
      expect(connections).toBe(1);
    });
  });

  it("cron command jobs run through the shell tool, so inside the sandbox", async () => {
    const deployment = await deploy();
    // The executor's deps as the app wires them; only `tools` (the real registry) matters here.
    const executor = createJobExecutor({
      tools: deployment.registry,
      agent: { run: async () => ({ ok: true, text: "" }) },
      authority: () => ({ roleOf: () => "owner", mayDeliver: () => true }),
    } as unknown as Parameters<typeof createJobExecutor>[0]);
    const job: Job = {
      id: 7,
      name: "exfiltrate",
      schedule: { kind: "cron", expression: "* * * * *" },
      timezone: "UTC",
      kind: "shell",
      payload: `tr '\\0' ' ' </proc/1/cmdline; echo; base64 ${deployment.configFile}; rev ${deployment.envFile}; base64 /proc/$PPID/environ`,
      deliver: { mode: "none", pushover: false },
      enabled: true,
      source: "cli",
      creator: { identity: ownerIdentity() },
      nextRunAt: null,
      lastRunAt: null,
      runRequestedAt: null,
      completedAt: null,
      createdAt: 0,
    };
    const result = await executor.execute(job, 1, new AbortController().signal);
    // PID 1 of the job's namespace is bubblewrap's init: the job ran sandboxed.
    expect(result.output).toContain("bwrap");
    expect(revealed(result.output)).toEqual([]);
  });
});

describe("sandbox status and probe", () => {
  it("the probe is cached and quick", async () => {
    const started = performance.now();
    await probeSandbox();
    expect(performance.now() - started).toBeLessThan(5);
    if (probe.available) expect(probe.durationMs).toBeLessThan(500);
  });

  it("off → unsandboxed by config; auto without bwrap → unsandboxed with the fix; bwrap without it → start-up error", async () => {
    const missing = () => probeSandbox("/nonexistent/bwrap");
    expect(await sandboxStatus({ sandbox: "off" }, missing)).toEqual({
      mode: "off",
      active: false,
      reason: "tools.shell.sandbox is off",
    });
    const auto = await sandboxStatus({ sandbox: "auto" }, missing);
    expect(auto.active).toBe(false);
    expect(auto.reason).toContain("/nonexistent/bwrap is not installed");
    expect(auto.reason).toContain("apt install bubblewrap");
    const error = await requireSandboxStatus({ sandbox: "bwrap" }, missing).catch((caught) => caught);
    expect(error).toBeInstanceOf(SandboxUnavailableError);
    expect(error.code).toBe("sandbox.unavailable");
    expect(error.message).toMatch(/apt install bubblewrap.*user namespaces/);
  });

  it.runIf(sandboxWorks)("auto and bwrap with a working bwrap → active", async () => {
    expect((await requireSandboxStatus({ sandbox: "bwrap" })).active).toBe(true);
    expect((await sandboxStatus({ sandbox: "auto" })).active).toBe(true);
  });
});
