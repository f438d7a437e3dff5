import http from "node:http";
import type { AddressInfo } from "node:net";
import { readBody, sendJson } from "../fakes/http-util.js";
import { TOKEN } from "./echo-llm.js";

/** The file each soak turn appends its marker line to (in the bot's workspace). */
export const LINES_FILE = "soak-lines.txt";

export interface ToolLlmOptions {
  /** Delay of each answer in ms: [min, max]. */
  delayMs: [number, number];
  /** Share of requests answered with a retryable failure first (500, 429 with retry-after, dropped connection). */
  faultRate: number;
  random: () => number;
  /**
   * An LLM outage right after a tool call (issue 35 → Waiting out an outage): once an answer asking for tool calls
   * is sent, the server goes down — it refuses connections until `up()`.
   */
  downAfterToolCall?: boolean;
}

interface WireMessage {
  role: string;
  content?: unknown;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
}

type MarkerState = "none" | "done" | "unknown" | "failed";

/**
 * An OpenAI-compatible server that plays a model using a side-effecting tool, decided from the request alone (so it
 * serves a process killed and restarted at any point): for each marker in the turn's user message it asks for one
 * `file_append` of the marker's line; a call whose outcome is unknown (`tool.outcome_unknown`, the call was running
 * at a crash) is checked with `file_grep` and appended again only when its line is not there; once every marker's
 * line is appended it answers `ack <markers>`.
 */
export class ToolLlm {
  requests = 0;
  faults = { status500: 0, status429: 0, dropped: 0 };
  /** Tool results the model was given, by kind. */
  seen = { outcomeUnknown: 0, checks: 0, reappends: 0, appendsAfterCheck: 0 };
  private calls = 0;
  private readonly server: http.Server;
  private port = 0;

  constructor(private readonly options: ToolLlmOptions) {
    this.server = http.createServer((request, response) => void this.handle(request, response));
  }

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

  /** Whether the server refuses connections now (see `downAfterToolCall`). */
  get isDown(): boolean {
    return !this.server.listening;
  }

  /** Refuses connections from now on: stops listening and drops the open ones (keep-alive sockets too). */
  down(): void {
    this.server.close();
    this.server.closeAllConnections();
  }

  /** Listens again on the same port: the model is back. */
  async up(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(this.port, "127.0.0.1", resolve));
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request);
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
    const body = JSON.parse(raw) as { messages: WireMessage[] };
    const message = this.decide(body.messages);
    await new Promise((resolve) => setTimeout(resolve, delayMs[0] + random() * (delayMs[1] - delayMs[0])));
    if (response.destroyed) return;
    if (this.options.downAfterToolCall && message.tool_calls) response.once("finish", () => this.down());
    sendJson(response, 200, {
      id: `tool-${this.requests}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "tooly",
      choices: [
        {
          index: 0,
          finish_reason: message.tool_calls ? "tool_calls" : "stop",
          message: { role: "assistant", ...message },
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    });
  }

  /** The next step of the turn, from what the request holds. */
  private decide(messages: WireMessage[]): Pick<WireMessage, "content" | "tool_calls"> {
    const lastUser = messages.map((message) => message.role).lastIndexOf("user");
    const markers = [...new Set(textOf(messages[lastUser]?.content).match(TOKEN) ?? [])];
    const state = new Map<string, MarkerState>(markers.map((marker) => [marker, "none"]));
    const asked = new Map<string, { name: string; marker?: string }>();
    for (const message of messages.slice(lastUser + 1)) {
      for (const call of message.tool_calls ?? []) {
        const args = JSON.parse(call.function.arguments || "{}") as { content?: string };
        asked.set(call.id, { name: call.function.name, marker: args.content?.trim() });
      }
      if (message.role !== "tool") continue;
      const call = asked.get(message.tool_call_id ?? "");
      const output = textOf(message.content);
      if (call?.name === "file_append" && call.marker && state.has(call.marker)) {
        state.set(
          call.marker,
          /(^|\n)Appended \d+ bytes/.test(output)
            ? "done"
            : output.includes("tool.outcome_unknown")
              ? "unknown"
              : "failed",
        );
      } else if (call?.name === "file_grep") {
        const found = new Set(JSON.stringify(matchesOf(output)).match(TOKEN) ?? []);
        for (const [marker, now] of state)
          if (now === "unknown") state.set(marker, found.has(marker) ? "done" : "failed");
      }
    }
    const unknown = markers.filter((marker) => state.get(marker) === "unknown");
    if (unknown.length > 0) {
      this.seen.outcomeUnknown += unknown.length;
      this.seen.checks++;
      // Check before doing it again: is the line there?
      return {
        content: null,
        tool_calls: [this.call("file_grep", { pattern: `^(${unknown.join("|")})$`, path: LINES_FILE })],
      };
    }
    const missing = markers.filter((marker) => state.get(marker) !== "done");
    if (missing.length > 0) {
      this.seen.reappends += missing.filter((marker) => state.get(marker) === "failed").length;
      // Appends of a turn that has read the file (its check), or whose chat did in an earlier turn still in its
      // history (the rule of two's history taint lasts until /reset): the owner may be asked for each.
      const checked = messages.some((message) =>
        (message.tool_calls ?? []).some((call) => call.function.name === "file_grep"),
      );
      if (checked) this.seen.appendsAfterCheck += missing.length;
      return {
        content: null,
        tool_calls: missing.map((marker) =>
          this.call("file_append", { path: LINES_FILE, content: `${marker}\n` }),
        ),
      };
    }
    return { content: `ack ${markers.join(" ")}` };
  }

  private call(name: string, args: Record<string, unknown>) {
    this.calls++;
    return {
      id: `call_${this.calls}_${Math.floor(this.options.random() * 1e9)}`,
      type: "function",
      function: { name, arguments: JSON.stringify(args) },
    };
  }
}

/** The matches of a file_grep result (its echo of the pattern names the markers too); none when it failed. */
function matchesOf(output: string): unknown {
  try {
    // A guard's warning lines may come first.
    return (JSON.parse(output.slice(output.indexOf("{"))) as { matches?: unknown }).matches ?? [];
  } catch {
    return [];
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? (part.text as string) : "")).join(" ");
  }
  return "";
}
