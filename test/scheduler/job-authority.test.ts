import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { specOfConfigJob } from "../../src/scheduler/config-jobs.js";
import { JobStore } from "../../src/scheduler/job-store.js";
import { Authority } from "../../src/security/authority.js";
import { migrate } from "../../src/store/database.js";
import { migrations } from "../../src/store/migrations/index.js";
import { makeRig, type Rig } from "./harness.js";

const config = parseConfig(
  { channels: { telegram: { allowFrom: ["777"], groups: ["-1001"] } } },
  { env: {}, cwd: tmpdir() },
);

describe("config jobs deliver only where the message tool may post", () => {
  let rig: Rig;
  afterEach(async () => {
    await rig.cleanup();
  });

  it("a config job reporting to a stranger's chat is a config error naming the key and the fix; nothing synced", () => {
    rig = makeRig({ authority: new Authority(config, null) });
    const jobs = parseConfig(
      {
        cron: {
          jobs: [
            {
              name: "ok",
              expression: "0 8 * * *",
              message: "hi",
              deliver: { channel: "telegram", chatId: -1001 },
            },
            {
              name: "leak",
              delay: "1m",
              command: "cat magpie.yaml",
              deliver: { channel: "telegram", chatId: 666 },
            },
          ],
        },
      },
      { env: {}, cwd: tmpdir() },
    ).cron.jobs.map(specOfConfigJob);
    expect(() => rig.scheduler.syncFromConfig(jobs)).toThrow(
      /^cron\.jobs\[1\]\.deliver\.chatId \("leak"\): chat 666 on telegram is not one Magpie may post to — .*channels\.telegram\.groups.*Add it there or change deliver\.chatId\.$/,
    );
    expect(rig.scheduler.list()).toEqual([]);
    expect(rig.scheduler.syncFromConfig(jobs.slice(0, 1))).toMatchObject({ added: 1 });
    expect(rig.jobs.list()[0]?.creator).toEqual({
      identity: { channel: "local", userId: "owner", role: "owner" },
    });
  });
});

describe("migration 006: jobs from before get creators", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a chat job's creator is who wrote in its session; config and CLI jobs are the local owner's", () => {
    dir = mkdtempSync(path.join(tmpdir(), "magpie-mig6-"));
    const db = new Database(path.join(dir, "magpie.db"));
    migrate(
      db,
      migrations.filter((migration) => migration.version <= 5),
    );
    const job = db.prepare(
      `INSERT INTO cron_jobs (name, schedule_kind, expression, timezone, kind, payload, deliver, source, created_by,
                              created_at, updated_at)
       VALUES (?, 'cron', '0 8 * * *', 'UTC', 'shell', 'df -h', ?, ?, ?, ?, ?)`,
    );
    const deliver = JSON.stringify({
      chat: { channel: "telegram", chatId: "777" },
      pushover: false,
      mode: "always",
    });
    db.prepare(
      "INSERT INTO inbox (channel, message_id, session_key, payload, status, received_at) VALUES (?, ?, ?, ?, 'done', ?)",
    ).run(
      "telegram",
      "m1",
      "telegram:777",
      JSON.stringify({ channel: "telegram", chatId: "777", userId: "777", userName: "Alice" }),
      1000,
    );
    db.prepare("INSERT INTO sessions (key, agent, created_at, updated_at) VALUES (?, ?, ?, ?)").run(
      "telegram:777",
      "ops",
      1000,
      1000,
    );
    job.run("from chat", deliver, "chat", "telegram:777", 2000, 2000);
    job.run("no inbox", deliver, "chat", "slack:C42:171.5", 2000, 2000);
    job.run("from config", deliver, "config", null, 2000, 2000);
    job.run("from cli", deliver, "cli", null, 2000, 2000);
    expect(migrate(db, migrations)).toContain(6);

    const [chat, noInbox, fromConfig, fromCli] = new JobStore(db).list();
    expect(chat).toMatchObject({
      creator: {
        identity: { channel: "telegram", userId: "777", userName: "Alice", role: "owner" },
        agent: "ops",
      },
      createdFrom: { channel: "telegram", chatId: "777" },
    });
    expect(chat?.creator.toolNames).toBeUndefined();
    expect(noInbox).toMatchObject({
      creator: { identity: { channel: "slack", userId: "owner", role: "owner" } },
      createdFrom: { channel: "slack", chatId: "C42", threadId: "171.5" },
    });
    for (const job of [fromConfig, fromCli]) {
      expect(job?.creator).toEqual({ identity: { channel: "local", userId: "owner", role: "owner" } });
      expect(job?.createdFrom).toBeUndefined();
    }
    db.close();
  });
});
