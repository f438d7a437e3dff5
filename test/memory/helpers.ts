import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { type Logger, pino } from "pino";
import { parseConfig } from "../../src/config/load.js";
import type { MagpieConfig } from "../../src/config/schema.js";
import { createMemoryService } from "../../src/memory/create-memory-service.js";
import type { MemoryService } from "../../src/memory/memory-service.js";
import { Store } from "../../src/store/index.js";

/** A temp data dir, removed by `cleanup()`. */
export function tempDir(): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), "magpie-memory-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Config for tests; `llm` holds baseUrl/embeddingModel when embeddings are wanted. */
export function testConfig(dataDir: string, extra: Record<string, unknown> = {}): MagpieConfig {
  return parseConfig({ dataDir, ...extra }, { env: {}, cwd: dataDir });
}

/** A pino logger whose JSON lines are collected in `lines`. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line.trim()) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: "debug" }, destination), lines };
}

/** Opens the store in `dataDir` and a memory service over it, as the app does. */
export function openMemory(config: MagpieConfig, logger: Logger): { store: Store; memory: MemoryService } {
  const store = Store.open(config.dataDir);
  return { store, memory: createMemoryService(config, store.db, logger) };
}
