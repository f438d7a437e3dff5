import { freezeMessage, frozenRun, sameFrozenPrefix } from "./frozen-message.js";
import { type MadeOf, madeOf, sameAsMade } from "./request-body.js";
import type { ChatModel, CompletionRequest, RequestMessage } from "./types.js";

/** The one method of the Redactor this needs (src/log/redact.ts). */
export interface TextRedactor {
  redact(text: string): string;
  /**
   * How many secrets it knows (the Redactor's): secrets are only ever added, so while this is unchanged a text is
   * redacted the same way. Without it nothing is kept between requests.
   */
  readonly size?: number;
}

/** Request texts whose redaction is kept, and their characters in all (past either, all are dropped). */
const KEPT_TEXTS = 4096;
const KEPT_CHARS = 4_000_000;
/** Longer texts are redacted afresh each time (a one-off paste is not worth keeping). */
const KEPT_TEXT_CHARS = 64_000;

/**
 * The redactor with each request text's redaction kept while the redactor's secrets are unchanged (issue 35, hot
 * path): every request sends the system prompt and the chat's history again, and running every secret form and
 * credential pattern over all of it, for each LLM call of a turn, grew with the history. A secret added (`size`
 * changes) drops everything kept: the next request is redacted with it, history included.
 */
function keptRedactions(redactor: TextRedactor): TextRedactor {
  if (redactor.size === undefined) return redactor;
  let size: number | undefined = redactor.size;
  let chars = 0;
  const kept = new Map<string, string>();
  return {
    redact(text) {
      if (redactor.size !== size) {
        kept.clear();
        chars = 0;
        size = redactor.size;
      }
      const found = kept.get(text);
      if (found !== undefined) return found;
      const redacted = redactor.redact(text);
      if (text.length <= KEPT_TEXT_CHARS) {
        if (kept.size >= KEPT_TEXTS || chars + text.length > KEPT_CHARS) {
          kept.clear();
          chars = 0;
        }
        kept.set(text, redacted);
        chars += text.length;
      }
      return redacted;
    },
  };
}

/** Each text redacted, for requests that send plain texts (embeddings). */
export function redactTexts(texts: readonly string[], redactor: TextRedactor): string[] {
  return texts.map((text) => redactor.redact(text));
}

/**
 * Each message's redacted copy, kept by the message object while it holds the same values and the redactor the
 * same secrets (issue 35, hot path): the same copy each time lets the request keep its JSON too
 * (src/llm/request-body.ts). A message changed in place, or a secret added, is redacted afresh.
 */
function keptMessages(
  secrets: TextRedactor,
  redactor: TextRedactor,
): (message: RequestMessage) => RequestMessage {
  if (secrets.size === undefined) return (message) => redactMessage(message, redactor);
  const kept = new WeakMap<object, { size: number | undefined; made: MadeOf; redacted: RequestMessage }>();
  return (message) => {
    if (Array.isArray(message.content)) return redactMessage(message, redactor);
    const found = kept.get(message);
    if (found && found.size === secrets.size && sameAsMade(found.made, message)) return found.redacted;
    const size = secrets.size;
    const redacted = redactMessage(message, redactor);
    kept.set(message, { size, made: madeOf(message), redacted });
    return redacted;
  };
}

/** A redacted copy, frozen whole when it can be kept (a message of text), so the request's bytes are kept by it. */
function redactMessage(message: RequestMessage, redactor: TextRedactor): RequestMessage {
  const copy = redactedCopy(message, redactor);
  return Array.isArray(copy.content) ? copy : freezeMessage(copy);
}

function redactedCopy(message: RequestMessage, redactor: TextRedactor): RequestMessage {
  if (Array.isArray(message.content)) {
    return {
      role: "user",
      content: message.content.map((part) =>
        part.type === "text" ? { type: "text" as const, text: redactor.redact(part.text) } : part,
      ),
    };
  }
  if (message.role === "assistant") {
    return {
      ...message,
      content: message.content === null ? null : redactor.redact(message.content),
      ...(message.tool_calls
        ? {
            tool_calls: message.tool_calls.map((call) => ({
              ...call,
              function: { ...call.function, arguments: redactor.redact(call.function.arguments) },
            })),
          }
        : {}),
    };
  }
  return { ...message, content: redactor.redact(message.content as string) } as RequestMessage;
}

/**
 * Redacts every message before it leaves for the provider (DESIGN.md: secrets never appear in LLM requests).
 * Tool results are redacted already; this also covers what a user typed, recalled memories and summaries.
 */
export function redactingModel(model: ChatModel, secrets: TextRedactor): ChatModel {
  const redactor = keptRedactions(secrets);
  const redact = keptMessages(secrets, redactor);
  const runs = keptRuns(secrets, redact);
  return {
    complete: (request: CompletionRequest, options) =>
      model.complete({ ...request, messages: runs(request.messages) }, options),
    ...(model.warm ? { warm: () => model.warm!() } : {}),
  };
}

/**
 * The messages redacted, the frozen ones a conversation's last request started with taken from that request's
 * copies (issue 35, hot path): each step of a turn sends the turn's system prompt, the chat's history and the turn so
 * far again, and looking each one up cost more than the rest of the step's request. Kept by the request's first
 * message (a turn's system prompt) while the redactor knows the same secrets; a frozen message can't have changed
 * (`src/llm/frozen-message.ts`), and the copies it is given are frozen too, so the next layer can keep by them.
 */
function keptRuns(
  secrets: TextRedactor,
  redact: (message: RequestMessage) => RequestMessage,
): (messages: readonly RequestMessage[]) => RequestMessage[] {
  if (secrets.size === undefined) return (messages) => messages.map(redact);
  const runs = new WeakMap<
    object,
    { size: number | undefined; messages: readonly RequestMessage[]; redacted: readonly RequestMessage[] }
  >();
  return (messages) => {
    const first = messages[0];
    if (!first) return [];
    const run = runs.get(first);
    const reused =
      run && run.size === secrets.size ? sameFrozenPrefix(messages, run.messages, run.messages.length) : 0;
    const redacted = run ? run.redacted.slice(0, reused) : [];
    for (let index = reused; index < messages.length; index++) redacted.push(redact(messages[index]!));
    const frozen = frozenRun(messages, reused);
    if (frozen > 0)
      runs.set(first, {
        size: secrets.size,
        messages: messages.slice(0, frozen),
        redacted: redacted.slice(0, frozen),
      });
    return redacted;
  };
}
