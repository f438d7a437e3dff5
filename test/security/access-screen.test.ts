import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import type { InboundSender } from "../../src/core/types.js";
import { ChannelAccessControl } from "../../src/security/access-control.js";
import { PairingStore } from "../../src/security/pairing.js";
import { Store } from "../../src/store/index.js";

function setup(channels: Record<string, unknown>) {
  const cwd = mkdtempSync(path.join(tmpdir(), "magpie-screen-"));
  const config = parseConfig({ channels }, { env: {}, cwd });
  const store = Store.open(":memory:");
  const pairing = new PairingStore(store.db, { now: () => 1_000_000 });
  return { access: new ChannelAccessControl(config, pairing), pairing };
}

const sender = (fields: Partial<InboundSender> = {}): InboundSender => ({
  channel: "matrix",
  chatId: "!room:x",
  userId: "@alice:x",
  userName: "alice",
  isDirect: true,
  ...fields,
});

/** `screen` answers what `check` would, from the envelope, and issues nothing (adapters ask before reading). */
describe("access control: screening a sender by the envelope", () => {
  it("says allowed, pairing or refused as check would, per policy", () => {
    const { access } = setup({
      matrix: { allowFrom: ["@alice:x"], groups: ["!ops:x"], homeserverUrl: "http://127.0.0.1:1" },
    });
    expect(access.screen(sender())).toBe("allowed");
    expect(access.screen(sender({ userId: "@mallory:x" }))).toBe("pairing");
    expect(access.screen(sender({ isDirect: false, chatId: "!ops:x", userId: "@mallory:x" }))).toBe(
      "allowed",
    );
    expect(access.screen(sender({ isDirect: false, chatId: "!other:x" }))).toBe("refused");
    expect(access.screen(sender({ channel: "console" }))).toBe("allowed");
    expect(access.screen(sender({ channel: "nonesuch" }))).toBe("refused");
    const allowlist = setup({ matrix: { dmPolicy: "allowlist", allowFrom: ["@alice:x"] } }).access;
    expect(allowlist.screen(sender({ userId: "@mallory:x" }))).toBe("refused");
    expect(setup({ matrix: { dmPolicy: "open" } }).access.screen(sender({ userId: "@mallory:x" }))).toBe(
      "allowed",
    );
    expect(setup({ matrix: { dmPolicy: "disabled" } }).access.screen(sender())).toBe("refused");
  });

  it("issues no pairing code: screening a stranger a hundred times leaves the pairing store empty", () => {
    const { access, pairing } = setup({ matrix: {} });
    for (let index = 0; index < 100; index++) {
      expect(access.screen(sender({ userId: `@s${index}:x`, chatId: `!r${index}:x` }))).toBe("pairing");
    }
    expect(pairing.pending()).toEqual([]);
  });
});
