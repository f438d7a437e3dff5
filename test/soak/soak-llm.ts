import http from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, sendJson } from "../fakes/http-util.js";

/**
 * An OpenAI-compatible server for the soak: `tool:list` runs file_list, `tool:mem` stores a memory (keys
 * cycle, so memory stays a fixed size), anything else — and every turn after a tool result — is answered; a
 * history compaction gets its summary.
 */
export class SoakLlm {
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
