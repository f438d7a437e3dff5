import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CHANNEL_ENTRIES } from "../../channels/catalog.js";
import { ENV_FALLBACKS, SECRET_PATHS } from "../../src/config/env.js";
import { parseConfig } from "../../src/config/load.js";
import type { InboundMessage } from "../../src/core/types.js";
import { ChannelAccessControl } from "../../src/security/access-control.js";
import { PairingStore } from "../../src/security/pairing.js";
import { Store } from "../../src/store/index.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** Code without comments: a channel named in prose is fine, a string comparison is not. */
function codeOf(file: string): string {
  return readFileSync(path.join(ROOT, file), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
}

/**
 * Where a catalog channel's name may stand in code: its own adapter files (`channels/<name>.ts`,
 * `channels/<name>-*.ts`), the catalog list, and the Markdown dialects named after the platforms.
 */
function mayNameChannel(file: string, name: string): boolean {
  const base = path.basename(file, ".ts");
  return (
    (path.dirname(file) === "channels" && (base === name || base.startsWith(`${name}-`))) ||
    file === path.join("channels", "catalog.ts") ||
    file.startsWith(path.join("channels", "format") + path.sep)
  );
}

function directMessage(channel: string): InboundMessage {
  return {
    channel,
    chatId: "chat-1",
    messageId: "1",
    userId: "stranger",
    userName: "Stranger",
    text: "hi",
    isDirect: true,
    mentionsBot: false,
    attachments: [],
    receivedAt: 0,
  };
}

describe("the channel catalog", () => {
  it("is the only place outside a channel's own files that names it", () => {
    const offenders: string[] = [];
    for (const file of [...sourceFiles("src"), ...sourceFiles("channels")]) {
      const code = codeOf(file);
      for (const { name } of CHANNEL_ENTRIES) {
        if (mayNameChannel(file, name)) continue;
        const named = new RegExp(`["'\`]${name}["'\`]|\\bchannels\\??\\.${name}\\b`).test(code);
        if (named) offenders.push(`${file} names "${name}"`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("has every entry's adapter run the contract suite", () => {
    const missing = CHANNEL_ENTRIES.filter((entry) => {
      const file = path.join(ROOT, "test", "channels", `${entry.name}.test.ts`);
      let text = "";
      try {
        text = readFileSync(file, "utf8");
      } catch {
        return true;
      }
      return !text.includes(`runAdapterContract("${entry.name}"`);
    }).map((entry) => entry.name);
    expect(missing).toEqual([]);
  });

  it("declares each entry's environment variables and secrets for config", () => {
    for (const entry of CHANNEL_ENTRIES) {
      for (const { env, key } of entry.env) {
        expect(ENV_FALLBACKS).toContainEqual({ env, path: ["channels", entry.name, ...key.split(".")] });
      }
      for (const key of entry.secrets) {
        expect(SECRET_PATHS).toContainEqual(["channels", entry.name, ...key.split(".")]);
      }
    }
  });

  it("gives every entry a config section with the access keys and their safe defaults", () => {
    const config = parseConfig({});
    for (const entry of CHANNEL_ENTRIES) {
      const section = (config.channels as Record<string, Record<string, unknown>>)[entry.name];
      expect(section, entry.name).toMatchObject({
        dmPolicy: "pairing",
        groupPolicy: "allowlist",
        allowFrom: [],
      });
      expect(entry.isEnabled(section), `${entry.name} off without credentials`).toBe(false);
    }
  });

  // Before the catalog, access control listed the channels by name: a new one was denied as "unknown channel".
  it("has access control apply each entry's rules, pairing included, instead of denying it as unknown", () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "magpie-catalog-"));
    const store = Store.open(dataDir);
    try {
      const config = parseConfig({});
      const access = new ChannelAccessControl(config, new PairingStore(store.db));
      for (const entry of CHANNEL_ENTRIES) {
        const decision = access.check(directMessage(entry.name));
        expect(decision, entry.name).toMatchObject({
          allow: false,
          reason: "unknown sender: pairing code issued",
        });
      }
      expect(access.check(directMessage("carrier-pigeon"))).toMatchObject({
        allow: false,
        reason: 'unknown channel "carrier-pigeon"',
      });
    } finally {
      store.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
