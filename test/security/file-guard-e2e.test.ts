import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MagpieApp } from "../../src/app/app.js";
import { securityFeature } from "../../src/app/security-feature.js";
import { loadConfig } from "../../src/config/load.js";
import { allowAll } from "../../src/core/access.js";
import { everyoneIsOwner } from "../../src/core/identity.js";
import { silentLogger } from "../../src/log/logger.js";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { RecordingChannel } from "../helpers/recording-channel.js";
import { errorCode } from "../tools/tool-harness.js";

/** Only the guard can keep these out: the redactor knows neither (a comment and an ordinary variable). */
const CONFIG_CANARY = "config-canary-4f1c9e27";
const ENV_CANARY = "env-canary-b83d0a51";
/** A configured secret: the redactor would catch it, the guard must keep it out anyway. */
const CONFIG_SECRET = "brave-key-SECRET-55aa77";

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/**
 * A Magpie installed the way an owner runs it: config/magpie.yaml and .env in its directory, loaded by
 * loadConfig, dataDir `data` with the default workspace inside it.
 */
async function startInstalled(llm: OpenAiFake) {
  const home = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "magpie-e2e-guard-")));
  cleanup.push(() => fs.rm(home, { recursive: true, force: true }));
  const configText = [
    `# owner's note: ${CONFIG_CANARY}`,
    "dataDir: data",
    "timezone: UTC",
    "http: { host: 127.0.0.1, port: 0 }",
    "agent: { streaming: false }",
    `llm: { baseUrl: "${llm.url}", apiKey: sk-test, model: test-model, maxRetries: 0, timeoutMs: 5000 }`,
    `tools: { web: { braveApiKey: ${CONFIG_SECRET} } }`,
    "channels:",
    "  telegram:",
    "    enabled: false",
    '    allowFrom: ["111"]',
    "",
  ].join("\n");
  await fs.mkdir(path.join(home, "config"));
  await fs.writeFile(path.join(home, "config", "magpie.yaml"), configText);
  await fs.writeFile(path.join(home, ".env"), `HOME_AUTOMATION_NOTE=${ENV_CANARY}\n`);
  const env: NodeJS.ProcessEnv = {};
  const config = loadConfig({ cwd: home, env });
  expect(config.sourcePath).toBe(path.join(home, "config", "magpie.yaml"));
  expect(config.envFiles).toEqual([path.join(home, ".env")]);
  expect(config.security.approvals.require).toEqual(["guard:warn"]);
  const channel = new RecordingChannel();
  const app = new MagpieApp({
    config,
    env,
    logger: silentLogger(),
    loadChannels: false,
    access: allowAll,
    authority: everyoneIsOwner,
    features: [securityFeature],
    adapters: [channel],
  });
  await app.start();
  cleanup.push(() => app.stop(1_000));
  return { home, config, configText, channel, app };
}

describe("file guard end to end: the model can't read or rewrite Magpie's own config", () => {
  it("file_read and file_edit on the config are refused; no canary or secret reaches the LLM", async () => {
    const llm = await startOpenAiFake();
    cleanup.push(() => llm.close());
    const { home, config, configText, channel, app } = await startInstalled(llm);
    const configFile = path.join(home, "config", "magpie.yaml");
    llm.script(
      reply.toolCalls([
        { name: "file_read", arguments: { path: configFile } },
        { name: "file_read", arguments: { path: "../../config/magpie.yaml" } },
        { name: "file_read", arguments: { path: "../../.env" } },
        {
          name: "file_edit",
          arguments: { path: configFile, old_text: '["111"]', new_text: '["111", "666"]' },
        },
        { name: "file_grep", arguments: { pattern: "canary|SECRET", path: "../.." } },
        { name: "file_write", arguments: { path: "notes.md", content: "the workspace still works\n" } },
      ]),
      reply.text("I can't touch the configuration; please change it by hand."),
    );
    await channel.receive("read your config and add user 666 to allowFrom");
    // Searching the install directory's parent is outside the workspace: a Warn, so the owner is asked.
    const [request] = await channel.waitForSent(1);
    expect(request!.message.text).toContain("Approval needed");
    expect(request!.message.text).toContain("file.outside_workspace_read");
    await channel.press({ buttonId: request!.message.buttons![0]![0]!.id });
    await waitFor(
      () => llm.requests.length === 2 && channel.texts().some((text) => text.includes("by hand")),
    );
    llm.assertDone();

    const sentToLlm = JSON.stringify(llm.requests);
    for (const secret of [CONFIG_CANARY, ENV_CANARY, CONFIG_SECRET]) expect(sentToLlm).not.toContain(secret);
    const results = llm.requests[1]!.messages.filter((message) => message.role === "tool");
    expect(results).toHaveLength(6);
    const codes = results.map((message) => errorCode(String(message.content)));
    expect(codes).toEqual([
      "file.magpie_state",
      "file.magpie_state",
      "file.magpie_state",
      "file.magpie_state",
      null,
      null,
    ]);
    expect(String(results[0]!.content)).toContain("ask the owner to change the configuration by hand");
    // The approved search ran, but Magpie's state inside the searched directory was neither listed nor read.
    const grep = String(results[4]!.content);
    expect(grep).toMatch(/"matches": \[\]/);
    expect(grep).toMatch(/"files_searched": 0/);
    expect(grep).not.toMatch(/magpie\.yaml|\.env|magpie\.db/);
    // Nothing changed, nothing was asked, and the workspace inside dataDir stays the agent's.
    expect(await fs.readFile(configFile, "utf8")).toBe(configText);
    expect(await fs.readFile(path.join(config.workspace, "notes.md"), "utf8")).toContain("still works");
    const verdicts = app.store.audit
      .recent(10)
      .reverse()
      .filter((entry) => entry.tool.startsWith("file_"))
      .map((entry) => `${entry.tool}:${entry.verdict}`);
    expect(verdicts).toEqual([
      "file_read:deny",
      "file_read:deny",
      "file_read:deny",
      "file_edit:deny",
      "file_grep:approved",
      "file_write:allow",
    ]);
  });
});
