import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { readBody, sendJson } from "../fakes/http-util.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { parseExposition, sumOf } from "../http/metrics-exposition.js";
import { ShippedBot } from "../shipped/shipped-bot.js";
import { FULL, seededRandom, sleep } from "./soak-size.js";

/**
 * Memory over time (issue 25): the built CLI under mixed traffic — messages whose turns run a tool (file_list),
 * memory writes (memory_store), plain answers, and cron jobs (message and agent) — with RSS and heap read from
 * `/metrics` at every sample. Prints the slope after warm-up in MiB per 10,000 answered messages. `npm run soak`
 * runs 30 minutes sampled every minute (target ≤ 2 MiB per 10,000 messages); `npm test` a short run that fails
 * only on a clear leak (tens of KiB kept per message).
 */
const SIZE = FULL
  ? { seconds: 30 * 60, sampleEveryMs: 60_000, warmUpMs: 5 * 60_000, leakMiBPer10k: 2 }
  : { seconds: 30, sampleEveryMs: 2_000, warmUpMs: 10_000, leakMiBPer10k: 400 };
const USERS = Array.from({ length: 8 }, (_, index) => 7_100 + index);
/** Messages sent but not yet answered at most (the bot answers as fast as it can, never more behind). */
const IN_FLIGHT = 12;
const MIB = 1024 * 1024;
/** How often RSS and heap are read between samples (each sample keeps its window's lowest reading). */
const PEEK_MS = FULL ? 2_000 : 500;

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const task of cleanup.reverse()) await task().catch(() => {});
});

/**
 * An OpenAI-compatible server for the soak: `tool:list` runs file_list, `tool:mem` stores a memory (keys
 * cycle, so memory stays a fixed size), anything else — and every turn after a tool result — is answered; a
 * history compaction gets its summary.
 */
class SoakLlm {
  private readonly server = http.createServer((request, response) => void this.handle(request, response));
  private port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(request)) as {
      messages?: Array<{ role: string; content: unknown }>;
    };
    if (!request.url?.endsWith("/chat/completions"))
      return sendJson(response, 404, { error: { message: "no" } });
    const messages = body.messages ?? [];
    const last = messages.at(-1);
    const text = typeof last?.content === "string" ? last.content : JSON.stringify(last?.content ?? "");
    const serial = /\bm(\d+)\b/.exec(text)?.[1] ?? "0";
    let message: Record<string, unknown> = { role: "assistant", content: `ok m${serial}` };
    if (/^"?(Conversation:|Earlier summary:)/.test(text)) {
      // History compaction asks for a summary of the older part of a chat.
      message = { role: "assistant", content: "The owner listed files and stored notes." };
    } else if (last?.role === "user" && text.includes("tool:list")) {
      message = toolCall("file_list", { path: "." });
    } else if (last?.role === "user" && text.includes("tool:mem")) {
      message = toolCall("memory_store", {
        key: `soak.note.${Number(serial) % 50}`,
        content: `note ${text}`,
      });
    }
    sendJson(response, 200, {
      id: `soak-${serial}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "soak-model",
      choices: [{ index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 },
    });
  }
}

let callId = 0;
function toolCall(name: string, args: unknown): Record<string, unknown> {
  return {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: `call_${++callId}`, type: "function", function: { name, arguments: JSON.stringify(args) } },
    ],
  };
}

interface Sample {
  atMs: number;
  messages: number;
  rssMiB: number;
  heapMiB: number;
  cronRuns: number;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const [x, y] of points) {
    numerator += (x - meanX) * (y - meanY);
    denominator += (x - meanX) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}

describe(`memory soak (${FULL ? "full" : "short"})`, () => {
  it(
    `${SIZE.seconds} s of messages, tools, memory writes and cron jobs: RSS and heap per 10,000 messages`,
    async () => {
      const random = seededRandom();
      const telegram = await new FakeTelegram().start();
      cleanup.push(() => telegram.close());
      const llm = await new SoakLlm().start();
      cleanup.push(() => llm.close());
      const bot = await ShippedBot.start({
        config: {
          llm: { baseUrl: llm.url, apiKey: "sk-soak", model: "soak-model" },
          // A small history budget: sessions reach their steady size (compacted by summary) within the warm-up,
          // so what grows after it is what stays, not chats filling up to the default 12,000 tokens.
          agent: { streaming: false, historyTokens: 1_500 },
          channels: {
            telegram: {
              token: telegram.validToken,
              apiRoot: telegram.apiRoot,
              pacing: false,
              allowFrom: USERS,
            },
          },
          http: { metrics: { enabled: true } },
          cron: {
            jobs: [
              {
                name: "reminder",
                expression: "*/5 * * * * *",
                message: "stretch",
                deliver: { channel: "telegram", chatId: String(USERS[0]), mode: "always" },
              },
              {
                name: "digest",
                expression: "*/10 * * * * *",
                prompt: "summarise m0",
                deliver: { mode: "none" },
              },
            ],
          },
        },
      });
      cleanup.push(() => bot.dispose());

      const samples: Sample[] = [];
      const begin = Date.now();
      // The heap is a saw-tooth between collections: each sample is the lowest reading of its window (read every
      // PEEK_MS), which is close to what survived the last collection.
      let lowest: Sample | null = null;
      let compactions = 0;
      const peek = async () => {
        const response = await fetch(`${bot.url}/metrics`);
        const { samples: values } = parseExposition(await response.text());
        const reading: Sample = {
          atMs: Date.now() - begin,
          messages: sumOf(values, "magpie_messages_total", { outcome: "answered" }),
          rssMiB: (values.get("process_resident_memory_bytes") ?? 0) / MIB,
          heapMiB: (values.get("nodejs_heap_size_used_bytes") ?? 0) / MIB,
          cronRuns: sumOf(values, "magpie_cron_runs_total"),
        };
        lowest = {
          ...reading,
          rssMiB: Math.min(reading.rssMiB, lowest?.rssMiB ?? Infinity),
          heapMiB: Math.min(reading.heapMiB, lowest?.heapMiB ?? Infinity),
        };
        return reading.messages;
      };
      const sample = async () => {
        await peek();
        samples.push(lowest!);
        lowest = null;
        compactions += bot.logLines.filter((line) => line.includes('"msg":"history-compacted"')).length;
        // The test's own copies of the bot's log and the fake's calls are not the bot's memory: dropped.
        bot.logLines.length = 0;
        telegram.calls.length = 0;
        const latest = samples.at(-1)!;
        console.log(
          `[memory-soak] ${Math.round(latest.atMs / 1000)} s: ${latest.messages} messages, rss ${latest.rssMiB.toFixed(1)} MiB, heap ${latest.heapMiB.toFixed(1)} MiB`,
        );
      };

      let sent = 0;
      let done = 0;
      let nextSample = 0;
      let nextPeek = 0;
      const deadline = begin + SIZE.seconds * 1000;
      while (Date.now() < deadline) {
        if (Date.now() - begin >= nextSample) {
          await sample();
          nextSample += SIZE.sampleEveryMs;
        }
        if (Date.now() - begin >= nextPeek) {
          await peek();
          nextPeek = Date.now() - begin + PEEK_MS;
        }
        if (sent - done >= IN_FLIGHT) {
          await sleep(50);
          // Messages with an outcome, from /metrics (a turn may answer several messages at once).
          const response = await fetch(`${bot.url}/metrics`);
          done = sumOf(parseExposition(await response.text()).samples, "magpie_messages_total");
          continue;
        }
        const user = USERS[random.int(0, USERS.length - 1)]!;
        const roll = random.next();
        const kind = roll < 0.4 ? "tool:list" : roll < 0.7 ? "tool:mem" : "hello";
        sent++;
        telegram.pushMessage({
          chat: { id: user, type: "private" },
          from: { id: user },
          text: `${kind} m${sent}`,
        });
      }
      await sample();

      const after = samples.filter((entry) => entry.atMs >= SIZE.warmUpMs);
      const rssSlope = slope(after.map((entry) => [entry.messages, entry.rssMiB])) * 10_000;
      const heapSlope = slope(after.map((entry) => [entry.messages, entry.heapMiB])) * 10_000;
      const last = samples.at(-1)!;
      const report = {
        seed: random.seed,
        seconds: Math.round(last.atMs / 1000),
        messages: last.messages,
        cronRuns: last.cronRuns,
        compactions,
        samplesAfterWarmUp: after.length,
        rssMiB: {
          first: samples[0]!.rssMiB.toFixed(1),
          afterWarmUp: after[0]?.rssMiB.toFixed(1),
          last: last.rssMiB.toFixed(1),
        },
        heapMiB: { afterWarmUp: after[0]?.heapMiB.toFixed(1), last: last.heapMiB.toFixed(1) },
        rssSlopeMiBPer10kMessages: Number(rssSlope.toFixed(2)),
        heapSlopeMiBPer10kMessages: Number(heapSlope.toFixed(2)),
        targetMiBPer10kMessages: SIZE.leakMiBPer10k,
      };
      console.log(`[memory-soak] ${JSON.stringify(report)}`);

      expect(last.messages).toBeGreaterThan(FULL ? 5_000 : 100);
      expect(last.cronRuns).toBeGreaterThan(2);
      // Chats reach their steady size: their history is compacted over and over.
      if (FULL) expect(compactions).toBeGreaterThan(10);
      expect(after.length).toBeGreaterThanOrEqual(FULL ? 20 : 8);
      // Heap is what a leak grows; RSS also holds allocator slack and warms up for minutes: bounded only in full.
      if (FULL) {
        expect(heapSlope).toBeLessThanOrEqual(SIZE.leakMiBPer10k);
        expect(rssSlope).toBeLessThanOrEqual(SIZE.leakMiBPer10k);
      } else {
        // Half a minute is noisy: a clear leak both climbs steeply and adds tens of MiB of heap that stays.
        const grewMiB = last.heapMiB - after[0]!.heapMiB;
        expect(
          heapSlope > SIZE.leakMiBPer10k && grewMiB > 25,
          `heap slope ${heapSlope}, grew ${grewMiB} MiB`,
        ).toBe(false);
      }
    },
    (SIZE.seconds + 60) * 1000,
  );
});
