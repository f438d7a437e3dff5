import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type AppOptions, MagpieApp } from "../../src/app/app.js";
import type { MagpieFeature } from "../../src/app/feature.js";
import { parseConfig } from "../../src/config/load.js";
import type { ConfigInput, MagpieConfig } from "../../src/config/schema.js";
import { allowAll } from "../../src/core/access.js";
import { everyoneIsOwner } from "../../src/core/identity.js";
import { silentLogger } from "../../src/log/logger.js";
import { type OpenAiFake, startOpenAiFake } from "../fakes/openai.js";
import { RecordingChannel } from "./recording-channel.js";

export interface TestAppOptions extends Omit<Partial<AppOptions>, "config"> {
  /** Config overrides (merged over a test base: temp dataDir, HTTP on port 0, no streaming, fake LLM). */
  config?: ConfigInput;
  /** Start an OpenAI fake and point `llm.baseUrl` at it (default true). Pass an existing fake to reuse it. */
  llm?: boolean | OpenAiFake;
  /** Reuse a data directory (restart tests). */
  dataDir?: string;
  /** Features to set up (default none: core only). Pass `features` from src/app/features.ts for everything. */
  features?: MagpieFeature[];
  /** The in-memory channel to attach (default: a new RecordingChannel named "test"). Pass null for none. */
  channel?: RecordingChannel | null;
  env?: NodeJS.ProcessEnv;
}

export interface TestApp {
  app: MagpieApp;
  config: MagpieConfig;
  llm: OpenAiFake | null;
  channel: RecordingChannel | null;
  dataDir: string;
  /** Base URL of the app's HTTP server. */
  url: string;
  /** Stops the app (and the LLM fake unless `keepLlm`); removes the data dir unless `keepData`. */
  stop(options?: { keepData?: boolean; keepLlm?: boolean }): Promise<void>;
}

function merge(base: Record<string, unknown>, override: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = out[key];
    out[key] =
      value && typeof value === "object" && !Array.isArray(value) && current && typeof current === "object"
        ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/** Builds a validated config for tests: temp data dir, no env leakage. */
export function testConfig(
  overrides: ConfigInput = {},
  dataDir?: string,
  env: NodeJS.ProcessEnv = {},
): MagpieConfig {
  const dir = dataDir ?? mkdtempSync(path.join(tmpdir(), "magpie-test-"));
  const base = {
    dataDir: dir,
    timezone: "UTC",
    http: { host: "127.0.0.1", port: 0 },
    // An LLM failure a test scripts is answered at once; the outage tests (test/core/outage-wait*.test.ts) turn
    // waiting it out (agent.retryOutageForSecs) on.
    agent: { streaming: false, retryOutageForSecs: 0 },
    llm: { model: "test-model", maxRetries: 0, timeoutMs: 5_000 },
  };
  return parseConfig(merge(base, overrides as Record<string, unknown>), { env, cwd: dir });
}

/**
 * Starts a whole Magpie (store, router, outbox, tools, features) against an OpenAI fake on 127.0.0.1,
 * with an in-memory RecordingChannel by default. Access control defaults to allow-all unless a feature
 * installs its own.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const llm =
    options.llm === false ? null : typeof options.llm === "object" ? options.llm : await startOpenAiFake();
  const overrides = (options.config ?? {}) as Record<string, unknown>;
  const llmOverrides = llm ? { llm: { baseUrl: llm.url, apiKey: "sk-test" } } : {};
  const config = testConfig(
    merge(llmOverrides, overrides) as ConfigInput,
    options.dataDir,
    options.env ?? {},
  );
  const channel = options.channel === null ? null : (options.channel ?? new RecordingChannel());
  const app = new MagpieApp({
    logger: silentLogger(),
    loadChannels: false,
    access: allowAll,
    authority: everyoneIsOwner,
    features: [],
    env: options.env ?? {},
    ...options,
    adapters: [...(channel ? [channel] : []), ...(options.adapters ?? [])],
    config,
  });
  await app.start();
  const address = app.http.address;
  return {
    app,
    config,
    llm,
    channel,
    dataDir: config.dataDir,
    url: address ? `http://127.0.0.1:${address.port}` : "",
    async stop(stopOptions = {}) {
      await app.stop(1_000);
      if (llm && !stopOptions.keepLlm && options.llm !== llm) await llm.close();
      if (!stopOptions.keepData) rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}
