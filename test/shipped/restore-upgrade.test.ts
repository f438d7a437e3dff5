import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OpenAiFake, reply, startOpenAiFake } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { ShippedBot } from "./shipped-bot.js";

/**
 * The shipped build's `magpie restore` (refused while Magpie runs, then backup → add memory → restore → the old
 * state), `magpie selftest` (the synthetic console turn `magpie upgrade` runs in a new release) and the refusals
 * of `magpie upgrade` that need no git checkout. The upgrade itself: test/upgrade/upgrade.test.ts.
 */

const OWNER = 811;

describe("shipped build: restore, selftest, upgrade refusals", () => {
  let telegram: FakeTelegram;
  let llm: OpenAiFake;
  let bot: ShippedBot;

  beforeAll(async () => {
    telegram = await new FakeTelegram().start();
    llm = await startOpenAiFake();
    bot = await ShippedBot.start({
      config: {
        llm: { baseUrl: llm.url, apiKey: "sk-test", model: "test-model" },
        agent: { streaming: false },
        tools: { shell: { sandbox: "off" } },
        channels: {
          telegram: {
            token: telegram.validToken,
            apiRoot: telegram.apiRoot,
            pacing: false,
            allowFrom: [OWNER],
          },
        },
      },
    });
  }, 60_000);

  afterAll(async () => {
    await bot?.dispose();
    await Promise.all([telegram?.close(), llm?.close()]);
  });

  it("selftest: one console turn reaches the configured model and its answer comes back", async () => {
    llm.script(reply.text("Upgrade check: all good."));
    const result = await bot.cli(["selftest"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^✓ synthetic turn: test-model answered through the console path in \d+ ms: .*Upgrade check: all good\./m,
    );
    expect(llm.requests.at(-1)?.messages.at(-1)?.content).toContain("Magpie's upgrade check");
    // A model that fails: the turn doesn't end ok, and selftest says so (exit 1).
    llm.script(reply.error(400, "model not found"));
    const failed = await bot.cli(["selftest"]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^✗ selftest: the turn ended error/m);
    llm.assertDone();
  }, 60_000);

  it("restore: refused while Magpie runs; after stopping, backup → add memory → restore shows the old state", async () => {
    const backup = path.join(bot.dir, "before.db");
    expect((await bot.cli(["memory", "add", "pet", "The owner has a cat"])).code).toBe(0);
    const saved = await bot.cli(["backup", "--to", backup]);
    expect(saved.code, saved.stderr).toBe(0);
    expect((await bot.cli(["memory", "add", "car", "The owner drives a red car"])).code).toBe(0);

    const database = readFileSync(path.join(bot.dataDir, "magpie.db"));
    const refused = await bot.cli(["restore", backup]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("✗ Magpie is running on");
    expect(refused.stderr).toContain("sudo systemctl stop magpie");
    expect(refused.stderr).toContain("docker compose stop");
    expect(readFileSync(path.join(bot.dataDir, "magpie.db")).equals(database)).toBe(true);

    expect(await bot.stop()).toBe(0);
    const notADatabase = path.join(bot.dir, "notes.txt");
    writeFileSync(notADatabase, "not a database\n");
    const wrong = await bot.cli(["restore", notADatabase]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("is not a SQLite database");
    expect(wrong.stderr).toContain("Nothing was changed.");
    expect((await bot.cli(["restore"])).code).toBe(2);
    expect((await bot.cli(["restore", backup, "--force"])).code).toBe(2);

    const restored = await bot.cli(["restore", backup]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(
      /^✓ Restored .*before\.db \(schema version \d{3}, [\d.]+ MiB\) as .*magpie\.db\.$/m,
    );
    expect(restored.stdout).toMatch(/kept at .*backups\/magpie-before-restore-\d{8}-\d{6}\.db/);
    const listed = await bot.cli(["memory", "list"]);
    expect(listed.stdout).toContain("The owner has a cat");
    expect(listed.stdout).not.toContain("red car");
  }, 60_000);

  it("upgrade: a ref starting with '-' is a usage error; with no Magpie running it refuses and changes nothing", async () => {
    const injected = await bot.cli(["upgrade", "--to=--upload-pack=touch /tmp/pwned"]);
    expect(injected.code).toBe(2);
    expect(injected.stderr).toContain(`can't start with "-"`);
    const stopped = await bot.cli(["upgrade"]);
    expect(stopped.code).toBe(1);
    expect(stopped.stderr).toContain("✗ No Magpie is running on");
    expect((await bot.cli(["upgrade", "--help"])).stdout).toContain(
      "Usage: magpie upgrade [--to <version or git ref>]",
    );
  }, 60_000);
});
