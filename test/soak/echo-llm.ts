import http from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, sendJson } from "../fakes/http-util.js";

/** Marker the soak puts in each message: the LLM echoes the markers of the turn's new messages. */
export const TOKEN = /\bq\d+x\b/g;

export interface EchoLlmOptions {
  /** Delay of each answer in ms: [min, max] (a SIGKILL lands mid-turn when it is long enough). */
  delayMs: [number, number];
  /** Share of requests answered with a retryable failure first (500, 429 with retry-after, dropped connection). */
  faultRate: number;
  random: () => number;
}

/**
 * An OpenAI-compatible server that answers every chat request with `ack <markers>`: the markers in the user
 * messages after the last assistant message (the messages this turn answers). Unlike the scripted fake it takes
 * any number of requests, so it can serve a process that is killed and restarted at random points.
 */
export class EchoLlm {
  requests = 0;
  faults = { status500: 0, status429: 0, dropped: 0 };
  private readonly server: http.Server;
  private port = 0;

  constructor(private readonly options: EchoLlmOptions) {
    this.server = http.createServer((request, response) => void this.handle(request, response));
  }

  /** Listens on `port` (default: any free one; the same one again to come back after `close`). */
  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(port, "127.0.0.1", resolve));
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
    const raw = await readBody(request);
    if (request.url?.endsWith("/embeddings")) {
      const body = JSON.parse(raw) as { input: string | string[] };
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      return sendJson(response, 200, {
        object: "list",
        data: inputs.map((_, index) => ({ object: "embedding", index, embedding: [1, 0, 0, 0] })),
        model: "echo-embed",
        usage: { prompt_tokens: 1, total_tokens: 1 },
      });
    }
    if (!request.url?.endsWith("/chat/completions"))
      return sendJson(response, 404, { error: { message: "no" } });
    this.requests++;
    const { random, faultRate, delayMs } = this.options;
    if (random() < faultRate) {
      const kind = random();
      if (kind < 0.4) {
        this.faults.status500++;
        return sendJson(response, 500, { error: { message: "soak: internal error", type: "server_error" } });
      }
      if (kind < 0.8) {
        this.faults.status429++;
        return sendJson(
          response,
          429,
          { error: { message: "soak: rate limited", type: "rate_limit" } },
          { "retry-after": "0" },
        );
      }
      this.faults.dropped++;
      request.socket.destroy();
      return;
    }
    const body = JSON.parse(raw) as {
      messages: Array<{ role: string; content?: unknown }>;
      stream?: boolean;
    };
    const lastAssistant = body.messages.map((message) => message.role).lastIndexOf("assistant");
    const fresh = body.messages
      .slice(lastAssistant + 1)
      .filter((message) => message.role === "user")
      .map((message) => textOf(message.content))
      .join("\n");
    const markers = [...new Set(fresh.match(TOKEN) ?? [])];
    const text = `ack ${markers.join(" ")}`;
    const delay = delayMs[0] + random() * (delayMs[1] - delayMs[0]);
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (response.destroyed) return;
    sendJson(response, 200, {
      id: `echo-${this.requests}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "echo",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text } }],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    });
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? (part.text as string) : "")).join(" ");
  }
  return "";
}
