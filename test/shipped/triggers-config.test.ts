import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runShippedCli } from "./shipped-bot.js";

/** A trigger's predicate is checked by the built CLI: `config check` and `start` name `triggers.<name>.when`. */
describe("shipped build: trigger predicates are config errors", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("config check and start fail on a bad `when`, naming its key; a good one passes", async () => {
    dir = mkdtempSync(path.join(tmpdir(), "magpie-trigger-config-"));
    const config = (when: string) =>
      JSON.stringify({
        dataDir: path.join(dir, "data"),
        http: { host: "127.0.0.1", port: 0 },
        triggers: {
          hot: {
            on: { webhook: { secret: "w".repeat(32) } },
            when,
            do: { message: "hot" },
            deliver: { channel: "console", chat_id: "local" },
          },
        },
      });
    const env = { PATH: process.env.PATH ?? "", HOME: dir };
    writeFileSync(path.join(dir, "bad.yaml"), config("event.payload.temperature >"));
    writeFileSync(path.join(dir, "good.yaml"), config("event.payload.temperature > 30.0"));
    const check = await runShippedCli(["config", "check", "--config", "bad.yaml"], { cwd: dir, env });
    expect(check.code).toBe(1);
    expect(check.stderr).toMatch(/triggers\.hot\.when: Unexpected token/);
    const start = await runShippedCli(["start", "--config", "bad.yaml"], { cwd: dir, env });
    expect(start.code).toBe(1);
    expect(`${start.stdout}${start.stderr}`).toMatch(/triggers\.hot\.when/);
    const good = await runShippedCli(["config", "check", "--config", "good.yaml"], { cwd: dir, env });
    expect(good.stdout).toContain("Configuration is valid");
    expect(good.code).toBe(0);
  });
});
