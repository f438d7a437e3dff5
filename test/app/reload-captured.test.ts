import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, describe, expect, it } from "vitest";
import { MagpieApp } from "../../src/app/app.js";
import { features } from "../../src/app/features.js";
import { isRestartOnly } from "../../src/config/config-change.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { allowAll } from "../../src/core/access.js";
import { everyoneIsOwner } from "../../src/core/identity.js";
import { silentLogger } from "../../src/log/logger.js";
import { reply, startOpenAiFake } from "../fakes/openai.js";
import { testConfig } from "../helpers/harness.js";
import { RecordingChannel } from "../helpers/recording-channel.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** Every object (section, list, map) in the config with its key path, held weakly. */
function objectsOf(value: unknown, keyPath: string, into: Array<{ keyPath: string; ref: WeakRef<object> }>) {
  if (value === null || typeof value !== "object") return into;
  if (keyPath) into.push({ keyPath, ref: new WeakRef(value) });
  for (const [key, child] of Object.entries(value))
    objectsOf(child, keyPath ? `${keyPath}.${key}` : key, into);
  return into;
}

const nextTask = () => new Promise((resolve) => setImmediate(resolve));

describe("a reload leaves no module with a value captured at start", () => {
  it("the running config is frozen; after a reload every reloadable section of the loaded one is released", async () => {
    const llm = await startOpenAiFake();
    stops.push(() => llm.close());
    let loaded: MagpieConfig | undefined = testConfig(
      {
        llm: { baseUrl: llm.url, apiKey: "sk-test" },
        http: { metrics: { enabled: true }, dashboard: { enabled: true, token: "d".repeat(32) } },
        budgets: { daily: { tokens: 1_000_000 } },
        cron: {
          jobs: [
            {
              name: "tick",
              expression: "0 9 * * *",
              message: "tick",
              deliver: { channel: "test", chatId: "c1" },
            },
          ],
        },
        security: { guestToolSet: ["read_file"] },
      },
      undefined,
      {},
    );
    const channel = new RecordingChannel();
    const app = new MagpieApp({
      config: loaded,
      logger: silentLogger(),
      loadChannels: false,
      access: allowAll,
      authority: everyoneIsOwner,
      adapters: [channel],
      features: features.filter((feature) => feature.name !== "access"),
      env: {},
    });
    const dataDir = loaded.dataDir;
    stops.push(() => app.stop(1_000));
    await app.start();
    expect(() => {
      (app.config.agent as { maxIterations: number }).maxIterations = 1;
    }).toThrow(TypeError);
    expect(() => {
      (app.config.llm as { model: string }).model = "Europe/Berlin";
    }).toThrow(TypeError);

    // Held weakly from here on: only what the app keeps keeps them alive.
    const watched = objectsOf(loaded, "", []).filter(({ keyPath }) => !isRestartOnly(keyPath));
    const next = structuredClone(loaded);
    loaded = undefined;
    next.agent.maxIterations = 3;
    const result = await app.reload(next);
    expect(result.failures).toEqual([]);
    expect(app.config.agent.maxIterations).toBe(3);
    // A turn after the reload: what reads the config at use reads the new one.
    llm.script(reply.text("after the reload"));
    await channel.receive("hello");
    await channel.waitForSent(1);
    await nextTask();
    gc();
    await nextTask();
    gc();
    const kept = watched.filter(({ ref }) => ref.deref() !== undefined).map(({ keyPath }) => keyPath);
    expect(kept, `still held after the reload (captured at start), under ${dataDir}`).toEqual([]);
  });
});
