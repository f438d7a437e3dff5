/**
 * A scripted OpenAI-compatible server on 127.0.0.1: chat completions (stream and non-stream, tool calls),
 * embeddings, /audio/transcriptions and /audio/speech. Each chat request consumes the next scripted step; an
 * unexpected call (nothing scripted) answers 500 and is recorded, and `assertDone()` fails on unexpected or
 * unconsumed calls.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string; description?: string; parameters?: unknown } }>;
  stream?: boolean;
  [key: string]: unknown;
}

/** Tool-call arguments: a value, a JSON string, or computed from the request (e.g. a path an earlier tool returned). */
function argumentsText(value: unknown, body: ChatRequestBody): string {
  const resolved = typeof value === "function" ? (value as (body: ChatRequestBody) => unknown)(body) : value;
  return typeof resolved === "string" ? resolved : JSON.stringify(resolved);
}

export type ScriptStep =
  | { kind: "text"; text: string; expect?: (body: ChatRequestBody) => void }
  | {
      kind: "tool_calls";
      calls: Array<{ id?: string; name: string; arguments: unknown }>;
      text?: string;
      expect?: (body: ChatRequestBody) => void;
    }
  | {
      kind: "error";
      status: number;
      message: string;
      /** Extra response headers, e.g. `{ "retry-after": "1" }`. */
      headers?: Record<string, string>;
      expect?: (body: ChatRequestBody) => void;
    }
  /** A stream that sends `text` (possibly none) and then drops the connection without finishing. */
  | { kind: "broken_stream"; text: string; expect?: (body: ChatRequestBody) => void }
  /** Never answers (timeouts); the connection is closed when the fake closes. */
  | { kind: "hang"; expect?: (body: ChatRequestBody) => void }
  /** Answers after `ms` with the inner step. */
  | { kind: "delay"; ms: number; then: ScriptStep; expect?: (body: ChatRequestBody) => void };

/** Builders for script steps. */
export const reply = {
  text: (text: string, expect?: (body: ChatRequestBody) => void): ScriptStep => ({
    kind: "text",
    text,
    expect,
  }),
  toolCalls: (
    calls: Array<{ id?: string; name: string; arguments: unknown }>,
    expect?: (body: ChatRequestBody) => void,
  ): ScriptStep => ({ kind: "tool_calls", calls, expect }),
  error: (status: number, message = "scripted failure", headers?: Record<string, string>): ScriptStep => ({
    kind: "error",
    status,
    message,
    headers,
  }),
  brokenStream: (text = ""): ScriptStep => ({ kind: "broken_stream", text }),
  hang: (): ScriptStep => ({ kind: "hang" }),
  delay: (ms: number, then: ScriptStep): ScriptStep => ({ kind: "delay", ms, then }),
};

export interface OpenAiFake {
  /** Base URL including `/v1`, for `llm.baseUrl`. */
  url: string;
  /** Every chat request body, in order. */
  requests: ChatRequestBody[];
  /** The headers of each chat request, in the same order as `requests`. */
  requestHeaders: http.IncomingHttpHeaders[];
  embeddingRequests: Array<{ model: string; input: string[] }>;
  /** `/audio/transcriptions` requests: the model and the audio file's size. */
  transcriptionRequests: Array<{ model: string; bytes: number }>;
  /** The file name each `/audio/transcriptions` request sent its audio under, in the same order. */
  transcriptionFileNames: string[];
  /** What `/audio/transcriptions` answers. */
  transcript: string;
  /** `/audio/speech` requests, in order. */
  speechRequests: Array<{ model: string; voice: string; input: string; response_format?: string }>;
  /** When set, `/audio/speech` answers this status with an error. */
  speechStatus: number | null;
  /** Problems seen: unexpected calls, failed expectations. */
  errors: string[];
  script(...steps: ScriptStep[]): void;
  /** Steps not yet consumed. */
  pending(): number;
  /** Throws when a call was unexpected or a scripted step was never consumed. */
  assertDone(): void;
  /** Embedding function (default: deterministic 384-dim hash vectors); set `embeddingStatus` to fail. */
  embed: (text: string) => number[];
  embeddingStatus: number | null;
  /** When true, GET /models demands `Bearer sk-test`. */
  requireKey: boolean;
  /**
   * The models GET /models lists and GET /models/{id} knows. Null (default): lists `test-model` and knows
   * every id.
   */
  models: string[] | null;
  /** When false, streams never carry a `usage` chunk, even when the request asks for one (default true). */
  streamUsage: boolean;
  close(): Promise<void>;
}

/** Deterministic pseudo-embedding: bag of hashed words, normalized (similar words → similar vectors). */
export function hashEmbedding(text: string, dimensions = 384): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const digest = createHash("sha256").update(word).digest();
    for (let i = 0; i < 4; i++) {
      const index = digest.readUInt16BE(i * 2) % dimensions;
      vector[index]! += digest[8 + i]! & 1 ? 1 : -1;
    }
  }
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}

/** What `/audio/speech` answers for `response_format: "opus"`: a real 0.3 s OGG/Opus file ("ok", espeak-ng + opusenc). */
export const SPEECH_OGG_OPUS = Buffer.from(
  "T2dnUwACAAAAAAAAAAAvBHArAAAAAIq7azsBE09wdXNIZWFkAQE4ASJWAAAAAABPZ2dTAAAAAAAAAAAAAC8EcCsBAAAAa4aSTgP///5PcHVzVGFncx8AAABsaWJvcHVzIDEuMy4xLCBsaWJvcHVzZW5jIDAuMi4xAgAAACMAAABFTkNPREVSPW9wdXNlbmMgZnJvbSBvcHVzLXRvb2xzIDAuMioAAABFTkNPREVSX09QVElPTlM9LS1iaXRyYXRlIDYgLS1kb3dubWl4LW1vbm8AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE9nZ1MABAeJAAAAAAAALwRwKwIAAACzBqeRJQ4WDw8PDgwNDA0PFA8NDg8PERMVEBYMCwoKCgwKCQYGBgYGBgYIgrdJQjiiPjB+b+rWwAi8gD1QUFNeZs4mszYBDLWH9hQf8IAIvTavoQ3fWloxTNKYWiAIvJCoRVlgMzNrjicVHJQIuiczoe8TN5MSr9Y7d/cIt3t6oGiOVATxYFVmwAg9+oAM1vPsIu3PoAiA+bqcGvKE64cXCvwIhZdAWNMMMN3jP/YIhXtAjhgO2CXYYTqACIWOxX77Fo+E5XYtkht7CLxDHENMCtImt4MLyLJfm58s87sIvNejEO8geZn9H4TmlQgIvLuWo6RLAevsIl5ACLySm5QjVlRjR45DzeAIvJKXyuvoceorKuIWn8AIvHHgFo5OHU2Iar2+I2AIvAqZYsOiGEuu2QwwjdiycAi8ZqlIQWzPDTXxYfNJsoskWYAIuzq2IMtcDhc6g5AkP5WbFoqlqqAIuLwKIIZgZgUBgtEpQqxQCL/FnclEAAHZFApBSB00wx66T4R45gg70RAAge4WKAacQAgjswAB9HEdpy+gCAmG66ey3daEgAgJf3I6vWmt3MwICKZkjXrKFmvACAimZI17WaB7uFmACAimZIx0jXagnggIpmSfhA+4uQgIrLMOxggIrLMOxggIrLMOxggIrLMOxggIrLMOxggIrLMOxggIrLMOxg==",
  "base64",
);

/** A valid 16-bit mono 16 kHz WAV of `seconds` of silence (what `/audio/speech` answers for other formats). */
export function silentWav(seconds: number): Buffer {
  const samples = Math.round(16_000 * seconds);
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write("RIFF", 0);
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write("WAVEfmt ", 8);
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(16_000, 24);
  wav.writeUInt32LE(32_000, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36);
  wav.writeUInt32LE(samples * 2, 40);
  return wav;
}

export async function startOpenAiFake(): Promise<OpenAiFake> {
  const steps: ScriptStep[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const fake: OpenAiFake = {
    url: "",
    requests: [],
    requestHeaders: [],
    embeddingRequests: [],
    transcriptionRequests: [],
    transcriptionFileNames: [],
    transcript: "fake transcript",
    speechRequests: [],
    speechStatus: null,
    errors: [],
    script: (...more) => void steps.push(...more),
    pending: () => steps.length,
    assertDone() {
      const problems = [...fake.errors];
      if (steps.length > 0) problems.push(`${steps.length} scripted LLM step(s) were never consumed`);
      if (problems.length > 0) throw new Error(`OpenAI fake: ${problems.join("; ")}`);
    },
    embed: (text) => hashEmbedding(text),
    embeddingStatus: null,
    requireKey: true,
    models: null,
    streamUsage: true,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };

  let counter = 0;
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = request.url ?? "";
    if (request.method === "POST" && url.endsWith("/audio/transcriptions")) {
      // multipart/form-data: the model field and the file part, read just enough to check them.
      const raw = Buffer.concat(chunks).toString("latin1");
      const model = /name="model"\r\n\r\n([^\r]*)/.exec(raw)?.[1] ?? "";
      const file = /name="file"[^\r]*\r\n(?:[^\r]+\r\n)*\r\n([\s\S]*?)\r\n--/.exec(raw)?.[1] ?? "";
      fake.transcriptionRequests.push({ model, bytes: file.length });
      fake.transcriptionFileNames.push(/name="file"; filename="([^"\r]*)"/.exec(raw)?.[1] ?? "");
      return json(response, 200, { text: fake.transcript });
    }
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = raw ? JSON.parse(raw) : {};
    if (request.method === "POST" && url.endsWith("/audio/speech")) {
      fake.speechRequests.push({
        model: body.model,
        voice: body.voice,
        input: body.input,
        response_format: body.response_format,
      });
      if (fake.speechStatus) return json(response, fake.speechStatus, errorBody("speech failure"));
      const opus = body.response_format === "opus";
      response.writeHead(200, { "content-type": opus ? "audio/ogg" : "audio/wav" });
      response.end(opus ? SPEECH_OGG_OPUS : silentWav(0.2));
      return;
    }
    if (request.method === "POST" && url.endsWith("/embeddings")) {
      const input: string[] = Array.isArray(body.input) ? body.input : [body.input];
      fake.embeddingRequests.push({ model: body.model, input });
      if (fake.embeddingStatus) return json(response, fake.embeddingStatus, errorBody("embedding failure"));
      return json(response, 200, {
        object: "list",
        model: body.model,
        data: input.map((text, index) => ({ object: "embedding", index, embedding: fake.embed(text) })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      });
    }
    const modelId = request.method === "GET" ? /\/models\/(.+)$/.exec(url)?.[1] : undefined;
    if (request.method === "GET" && (url.endsWith("/models") || modelId)) {
      if (request.headers.authorization !== "Bearer sk-test" && fake.requireKey) {
        return json(response, 401, errorBody("invalid api key"));
      }
      if (modelId) {
        const id = decodeURIComponent(modelId);
        return !fake.models || fake.models.includes(id)
          ? json(response, 200, { id, object: "model", owned_by: "fake" })
          : json(response, 404, errorBody(`model ${id} not found`));
      }
      return json(response, 200, {
        object: "list",
        data: (fake.models ?? ["test-model"]).map((id) => ({ id, object: "model", owned_by: "fake" })),
      });
    }
    if (request.method !== "POST" || !url.endsWith("/chat/completions")) {
      fake.errors.push(`unexpected request ${request.method} ${url}`);
      return json(response, 404, errorBody(`no route ${url}`));
    }
    fake.requests.push(body as ChatRequestBody);
    fake.requestHeaders.push(request.headers);
    const step = steps.shift();
    if (!step) {
      fake.errors.push(`unexpected chat completion call #${fake.requests.length} (nothing scripted)`);
      return json(response, 500, errorBody("OpenAI fake: unexpected call, nothing scripted"));
    }
    await answer(step, body as ChatRequestBody, response, `chatcmpl-${++counter}`);
  });

  async function answer(step: ScriptStep, body: ChatRequestBody, response: http.ServerResponse, id: string) {
    try {
      step.expect?.(body);
    } catch (error) {
      fake.errors.push(`expectation failed: ${(error as Error).message}`);
    }
    if (step.kind === "hang") return;
    if (step.kind === "delay") {
      await new Promise((resolve) => setTimeout(resolve, step.ms));
      return answer(step.then, body, response, id);
    }
    if (step.kind === "error") return json(response, step.status, errorBody(step.message), step.headers);
    if (step.kind === "broken_stream") {
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: unknown) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model: body.model, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
      response.write(chunk({ role: "assistant", content: "" }));
      if (step.text) response.write(chunk({ content: step.text }));
      // Let the chunks leave before the connection drops mid-stream.
      setTimeout(() => response.socket?.destroy(), 20);
      return;
    }
    const text = step.kind === "text" ? step.text : (step.text ?? null);
    const toolCalls =
      step.kind === "tool_calls"
        ? step.calls.map((call, index) => ({
            id: call.id ?? `call_${id}_${index}`,
            type: "function",
            function: {
              name: call.name,
              arguments: argumentsText(call.arguments, body),
            },
          }))
        : undefined;
    const finish = toolCalls ? "tool_calls" : "stop";
    if (!body.stream) {
      return json(response, 200, {
        id,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            finish_reason: finish,
            message: { role: "assistant", content: text, tool_calls: toolCalls },
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      });
    }
    response.writeHead(200, { "content-type": "text/event-stream" });
    const base = {
      id,
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model: body.model,
    };
    const send = (delta: unknown, finishReason: string | null = null) =>
      response.write(
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`,
      );
    send({ role: "assistant", content: "" });
    if (text) for (const piece of text.match(/[\s\S]{1,8}/g) ?? []) send({ content: piece });
    toolCalls?.forEach((call, index) => {
      send({
        tool_calls: [
          { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } },
        ],
      });
      for (const piece of call.function.arguments.match(/[\s\S]{1,10}/g) ?? []) {
        send({ tool_calls: [{ index, function: { arguments: piece } }] });
      }
    });
    send({}, finish);
    const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
    if (streamOptions?.include_usage && fake.streamUsage) {
      const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
      response.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
    }
    response.end("data: [DONE]\n\n");
  }

  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return fake;
}

function json(
  response: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "content-type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

function errorBody(message: string) {
  return { error: { message, type: "fake_error", code: null } };
}
