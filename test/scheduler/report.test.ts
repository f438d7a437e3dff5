import { describe, expect, it } from "vitest";
import type { Job } from "../../src/scheduler/job.js";
import { formatChatReport, formatPushoverReport, shellOutputText } from "../../src/scheduler/report.js";

const job = (kind: Job["kind"]): Job => ({
  id: 7,
  name: "nightly",
  schedule: { kind: "cron", expression: "0 3 * * *" },
  timezone: "Europe/Berlin",
  kind,
  payload: "backup.sh",
  deliver: { pushover: false, mode: "always" },
  creator: { identity: { channel: "local", userId: "owner", role: "owner" } },
  enabled: true,
  source: "chat",
  nextRunAt: null,
  lastRunAt: null,
  runRequestedAt: null,
  completedAt: null,
  createdAt: 0,
});

describe("run reports", () => {
  it("fits one message of the channel, keeping the end of shell output in a code block", () => {
    const output = Array.from({ length: 2000 }, (_, index) => `line ${index}`).join("\n");
    const text = formatChatReport(
      job("shell"),
      { status: "ok", output, trigger: "schedule", scheduledAt: 0, durationMs: 1500 },
      2000,
    );
    expect(text.length).toBeLessThanOrEqual(2000);
    expect(text).toMatch(/^\*\*⏰ nightly\*\* \(#7\) — ✅ ok in 1\.5 s\n```\n…\(truncated\)/);
    expect(text).toMatch(/line 1999\n```$/);
  });

  it("sends a reminder as itself and says when a run was caught up", () => {
    expect(
      formatChatReport(
        job("message"),
        { status: "ok", output: "stand up", trigger: "schedule", scheduledAt: 0, durationMs: 0 },
        4000,
      ),
    ).toBe("stand up");
    const caughtUp = formatChatReport(
      job("agent"),
      {
        status: "ok",
        output: "all good",
        trigger: "catch_up",
        scheduledAt: Date.UTC(2026, 4, 4, 1),
        durationMs: 10,
      },
      4000,
    );
    expect(caughtUp).toMatch(
      /caught up \(missed at 04\/05\/2026, 03:00 while Magpie was down\)\n\nall good$/,
    );
  });

  it("keeps Pushover reports within Pushover's limits", () => {
    const report = formatPushoverReport(job("agent"), {
      status: "error",
      output: "x".repeat(5000),
      trigger: "schedule",
      scheduledAt: 0,
      durationMs: 0,
    });
    expect(report.title).toBe("nightly — ❌ failed");
    expect(report.message.length).toBeLessThanOrEqual(1024);
  });

  it("reads the shell tool's JSON result and its failures", () => {
    expect(shellOutputText('{"exit_code":0,"stdout":"hi\\n","stderr":""}')).toEqual({ ok: true, text: "hi" });
    expect(shellOutputText('{"exit_code":2,"stdout":"","stderr":"nope"}')).toEqual({
      ok: false,
      text: "[stderr]\nnope\n[exit code 2]",
    });
    expect(
      shellOutputText('{"ok":false,"error":{"code":"shell.denied","message":"rm -rf / is denied"}}'),
    ).toEqual({
      ok: false,
      text: "shell.denied: rm -rf / is denied",
    });
  });
});
