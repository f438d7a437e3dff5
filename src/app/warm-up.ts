import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { clockLine } from "../core/system-prompt.js";
import type { HttpServer } from "../http/server.js";
import { wallTimeAt } from "../lib/zoned-time.js";
import type { ChatModel } from "../llm/types.js";
import type { ToolRegistry } from "../tools/registry.js";

export interface WarmUpParts {
  model: ChatModel | null;
  tools: ToolRegistry;
  http: HttpServer;
  timezone: string;
  logger: Logger;
  /** The features' own warm-up tasks (memory's prepared statements). */
  tasks: Array<() => void | Promise<void>>;
}

/** One request to our own health endpoint on loopback (see `warmUp`). */
async function warmFetch(http: HttpServer): Promise<void> {
  const address = http.address;
  if (!address) return;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const local = host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
  const response = await fetch(`http://${local}:${address.port}/healthz`);
  await response.arrayBuffer();
}

/**
 * What the first reply would otherwise pay for (measured in `npm run bench -- startup`): the LLM client and its
 * SDK, every enabled tool's JSON Schema, and the features' warm-up tasks. Runs while the channels connect; a
 * failure is logged only.
 */
export async function warmUp({ model, tools, http, timezone, logger, tasks }: WarmUpParts): Promise<void> {
  const steps: Array<() => void | Promise<void>> = [
    () => model?.warm?.(),
    () => void tools.specs(tools.enabledNames()),
    // The first UUID seeds a buffer of random bytes (a few ms); turns and outbox entries each take one.
    () => void randomUUID(),
    // The first time-zone formatters load ICU's zone data (~10 ms): the prompt's clock line, budget periods.
    () => void clockLine(timezone, new Date()),
    () => void wallTimeAt(Date.now(), timezone),
    // The first fetch builds undici's dispatcher and compiles its HTTP parser (~8 ms), which the first LLM
    // request would otherwise wait for: one request to our own health endpoint on loopback does it instead.
    () => warmFetch(http),
    ...tasks,
  ];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      logger.debug({ err: error }, "warm-up-failed");
    }
  }
}
