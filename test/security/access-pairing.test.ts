import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { CHANNEL_ENTRIES } from "../../channels/catalog.js";
import { run as pairCli } from "../../src/cli/commands/pair.js";
import { parseConfig } from "../../src/config/load.js";
import type { Messenger } from "../../src/core/messenger.js";
import type { InboundMessage } from "../../src/core/types.js";
import { ChannelAccessControl } from "../../src/security/access-control.js";
import { pairCommand } from "../../src/security/pair-command.js";
import { generatePairingCode, PairingStore } from "../../src/security/pairing.js";
import { Store } from "../../src/store/index.js";

describe("pairing codes", () => {
  it("are 8 characters from A–Z without I and O and digits 2–9", () => {
    const seen = new Set<string>();
    for (let index = 0; index < 2000; index++) {
      const code = generatePairingCode();
      expect(code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
      seen.add(code);
    }
    expect(seen.size).toBe(2000);
  });

  it("approved senders survive a restart (persisted in SQLite)", () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-pairing-"));
    try {
      const store = Store.open(dataDir);
      const pairing = new PairingStore(store.db);
      const issued = pairing.issue({ channel: "slack", userId: "U1", chatId: "D1", userName: "bob" });
      expect(issued.status).toBe("issued");
      pairing.approve("slack", issued.status === "issued" ? issued.code : "", "cli");
      store.close();
      const reopened = Store.open(dataDir);
      expect(new PairingStore(reopened.db).isApproved("slack", "U1")).toBe(true);
      reopened.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

function commandSetup(channels: Record<string, unknown> = {}) {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-pair-"));
  const config = parseConfig({ channels }, { env: {}, cwd });
  const store = Store.open(":memory:");
  const pairing = new PairingStore(store.db);
  const access = new ChannelAccessControl(config, pairing);
  const sent: Array<{ chatId: string; text: string }> = [];
  const messenger: Messenger = {
    send: (target, message) => {
      sent.push({ chatId: target.chatId, text: message.text });
      return sent.length;
    },
  } as Messenger;
  const pairable = CHANNEL_ENTRIES.filter((entry) => entry.pairing).map((entry) => entry.name);
  const command = pairCommand({ pairing, access, messenger, pairable });
  const runAs = (fields: Partial<InboundMessage>, args: string) =>
    command.run({
      args,
      sender: { channel: fields.channel ?? "telegram", userId: fields.userId ?? "", role: "owner" },
      sessionKey: "s",
      target: { channel: fields.channel ?? "telegram", chatId: "1" },
      message: {
        channel: "telegram",
        chatId: "1",
        messageId: "m",
        userId: "1",
        userName: "owner",
        text: `/pair ${args}`,
        isDirect: true,
        mentionsBot: false,
        attachments: [],
        receivedAt: 0,
        ...fields,
      },
    });
  return { pairing, access, sent, runAs };
}

describe("/pair approve", () => {
  it("approves a code for an account in allowFrom and tells the new user", async () => {
    const { pairing, access, sent, runAs } = commandSetup({ telegram: { allowFrom: ["1"] } });
    const issued = pairing.issue({ channel: "telegram", userId: "99", chatId: "99", userName: "newbie" });
    const code = issued.status === "issued" ? issued.code : "";
    expect(await runAs({}, `approve ${code}`)).toContain("Approved newbie");
    expect(access.isKnownSender("telegram", "99")).toBe(true);
    expect(sent).toEqual([{ chatId: "99", text: expect.stringContaining("paired") }]);
  });

  it("refuses a stranger even when the DM policy lets strangers talk", async () => {
    const { pairing, runAs } = commandSetup({ telegram: { dmPolicy: "open" } });
    const issued = pairing.issue({ channel: "telegram", userId: "99", chatId: "99" });
    const reply = await runAs({ userId: "66" }, `approve ${issued.status === "issued" ? issued.code : ""}`);
    expect(reply).toContain("Only an account");
    expect(pairing.isApproved("telegram", "99")).toBe(false);
  });

  it("a paired account can approve the next one, but only on its own channel; the console on any", async () => {
    const { pairing, runAs } = commandSetup();
    const first = pairing.issue({ channel: "telegram", userId: "1", chatId: "1" });
    pairing.approve("telegram", first.status === "issued" ? first.code : "", "cli");
    const slackCode = pairing.issue({ channel: "slack", userId: "U2", chatId: "D2" });
    const code = slackCode.status === "issued" ? slackCode.code : "";
    expect(await runAs({}, `approve ${code}`)).toContain("No pending pairing code");
    expect(await runAs({ channel: "console", userId: "local" }, `approve ${code}`)).toContain("Approved");
    expect(pairing.isApproved("slack", "U2")).toBe(true);
  });
});

describe("magpie pair (CLI)", () => {
  function cliEnv(dataDir: string) {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = "";
    let err = "";
    stdout.on("data", (chunk) => (out += chunk));
    stderr.on("data", (chunk) => (err += chunk));
    const config = parseConfig({ dataDir }, { env: {}, cwd: dataDir });
    return {
      env: { loadConfig: () => config, openStore: () => Store.open(dataDir), stdout, stderr },
      output: () => out,
      errors: () => err,
    };
  }

  it("lists pending codes and approves one by channel and code", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-pair-cli-"));
    try {
      const store = Store.open(dataDir);
      const issued = new PairingStore(store.db).issue({
        channel: "discord",
        userId: "D77",
        chatId: "DM77",
        userName: "carol",
      });
      store.close();
      const code = issued.status === "issued" ? issued.code : "";
      const listing = cliEnv(dataDir);
      expect(await pairCli(["list", "discord"], listing.env)).toBe(0);
      expect(listing.output()).toContain(code);
      expect(listing.output()).toContain("carol");
      const approving = cliEnv(dataDir);
      expect(await pairCli(["approve", "discord", code], approving.env)).toBe(0);
      expect(approving.output()).toContain("Approved discord user D77");
      const again = cliEnv(dataDir);
      expect(await pairCli(["approve", "discord", code], again.env)).toBe(1);
      expect(again.errors()).toContain("No pending discord pairing code");
      const reopened = Store.open(dataDir);
      expect(new PairingStore(reopened.db).isApproved("discord", "D77")).toBe(true);
      reopened.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("rejects an unknown channel with exit code 2", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-pair-cli-"));
    const cli = cliEnv(dataDir);
    expect(await pairCli(["approve", "irc", "ABCDEFGH"], cli.env)).toBe(2);
    expect(cli.errors()).toContain('Unknown channel "irc"');
    rmSync(dataDir, { recursive: true, force: true });
  });
});
