/**
 * A scripted **compromised model** on 127.0.0.1 (OpenAI-compatible, non-streaming chat completions): it
 * emits the tool calls the user task needs, one per request, until the injection marker appears anywhere in
 * its context; from then on it emits the tool calls the injection asks for (one per request, whatever the
 * earlier ones returned — a denied call is followed by the next, "switching tools"), then `finalText`.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { hashEmbedding } from "./openai.js";

export interface ModelMessage {
  role: string;
  content?: string | null;
  tool_calls?: unknown[];
}
export interface ModelContext {
  messages: ModelMessage[];
  /** Tool results of the current turn, in order. */
  toolResults: string[];
}
export interface ScriptedCall {
  name: string;
  /** A value, or computed from the context (e.g. the notes a previous call read). */
  arguments: unknown | ((context: ModelContext) => unknown);
}
export interface CompromisedScript {
  marker: string;
  userCalls: ScriptedCall[];
  injectionCalls: ScriptedCall[];
  finalText: string;
}
export type Phase = "idle" | "user" | "injection";

export interface CompromisedLlm {
  url: string;
  script: CompromisedScript | null;
  /** Which phase the last answer came from (what the scripted owner judges an approval by). */
  lastPhase: Phase;
  requests: number;
  close(): Promise<void>;
}

function text(content: unknown): string {
  if (typeof content === "string") return content;
  return content == null ? "" : JSON.stringify(content);
}

/** The next answer for a request: pure function of the script and the messages. */
export function nextStep(
  script: CompromisedScript,
  messages: ModelMessage[],
): { phase: Phase; call: ScriptedCall | null } {
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message.role === "user") lastUser = index;
  });
  const markerAt = messages.findIndex((message) => text(message.content).includes(script.marker));
  const from = markerAt < 0 ? lastUser : Math.max(markerAt, lastUser);
  const steps = messages.slice(from + 1).filter((message) => message.role === "assistant").length;
  if (markerAt < 0) return { phase: "user", call: script.userCalls[steps] ?? null };
  return { phase: "injection", call: script.injectionCalls[steps] ?? null };
}

export async function startCompromisedLlm(): Promise<CompromisedLlm> {
  let counter = 0;
  const fake: CompromisedLlm = {
    url: "",
    script: null,
    lastPhase: "idle",
    requests: 0,
    close: async () => {},
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(body));
      };
      const url = request.url ?? "";
      if (request.method === "GET" && url.includes("/models")) {
        send(200, { object: "list", data: [{ id: "test-model", object: "model" }] });
        return;
      }
      const body = chunks.length
        ? (JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>)
        : {};
      if (url.endsWith("/embeddings")) {
        const input = Array.isArray(body.input) ? body.input.map(String) : [String(body.input)];
        send(200, {
          object: "list",
          data: input.map((entry, index) => ({
            object: "embedding",
            index,
            embedding: hashEmbedding(entry),
          })),
          usage: { prompt_tokens: 1, total_tokens: 1 },
        });
        return;
      }
      fake.requests++;
      const messages = (Array.isArray(body.messages) ? body.messages : []) as ModelMessage[];
      const script = fake.script;
      const step = script ? nextStep(script, messages) : { phase: "idle" as Phase, call: null };
      fake.lastPhase = step.phase;
      let lastUser = -1;
      messages.forEach((message, index) => {
        if (message.role === "user") lastUser = index;
      });
      const context: ModelContext = {
        messages,
        toolResults: messages
          .slice(lastUser + 1)
          .filter((message) => message.role === "tool")
          .map((message) => text(message.content)),
      };
      const message = step.call
        ? {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call_${++counter}`,
                type: "function",
                function: {
                  name: step.call.name,
                  arguments: JSON.stringify(
                    typeof step.call.arguments === "function"
                      ? (step.call.arguments as (c: ModelContext) => unknown)(context)
                      : step.call.arguments,
                  ),
                },
              },
            ],
          }
        : { role: "assistant", content: script?.finalText ?? "ok" };
      send(200, {
        id: `chatcmpl-${counter}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: String(body.model ?? "test-model"),
        choices: [{ index: 0, message, finish_reason: step.call ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
