import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { QuestionAnswer, QuestionRequest } from "../core/approvals.js";
import { type Clock, systemClock } from "../core/clock.js";
import type { AuthorityPort, SenderIdentity } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import type { ButtonPress, InboundMessage } from "../core/types.js";
import { revealInvisible } from "../lib/reveal-invisible.js";
import type { Db } from "../store/database.js";

export interface QuestionGateOptions {
  db: Db;
  messenger: Messenger;
  logger: Logger;
  authority: () => AuthorityPort;
  clock?: Clock;
}

interface Waiting {
  request: QuestionRequest;
  resolve(answer: QuestionAnswer): void;
  timer: NodeJS.Timeout;
  cleanup(): void;
}

const BUTTON_ID = /^q:([0-9a-f]+):(\d+)$/;

/**
 * `ask_question` in chat: posts the question with its options as buttons (and numbered, for chats without
 * buttons), and resolves when the person asked answers — by a button, by the option's number or label, or (if
 * custom answers are allowed) by any text — or when it times out. The same shape as approvals: persisted,
 * answered only by whom it was asked of (any owner when that is an owner), and a restart ends it.
 */
export class QuestionGate {
  private readonly waiting = new Map<string, Waiting>();
  private readonly clock: Clock;

  constructor(private readonly options: QuestionGateOptions) {
    this.clock = options.clock ?? systemClock;
    const orphans = options.db
      .prepare("UPDATE questions SET status = 'interrupted', answered_at = ? WHERE status = 'pending'")
      .run(this.clock.now()).changes;
    if (orphans > 0) options.logger.info({ orphans }, "questions-interrupted-after-restart");
  }

  ask(request: QuestionRequest): Promise<QuestionAnswer> {
    if (request.signal?.aborted) return Promise.resolve({ answer: null, reason: "cancelled" });
    const id = randomBytes(4).toString("hex");
    const now = this.clock.now();
    this.options.db
      .prepare(
        `INSERT INTO questions (id, session_key, channel, chat_id, asked_of, prompt, options, allow_custom, asked_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        request.sessionKey,
        request.target.channel,
        request.target.chatId,
        JSON.stringify(request.askedOf),
        request.prompt,
        JSON.stringify(request.options),
        request.allowCustom ? 1 : 0,
        now,
        now + request.timeoutMs,
      );
    const answer = new Promise<QuestionAnswer>((resolve) => {
      const onAbort = () => this.finish(id, { answer: null, reason: "cancelled" }, null);
      request.signal?.addEventListener("abort", onAbort, { once: true });
      const timer = setTimeout(
        () => this.finish(id, { answer: null, reason: "timeout" }, null),
        request.timeoutMs,
      );
      this.waiting.set(id, {
        request,
        resolve,
        timer,
        cleanup: () => request.signal?.removeEventListener("abort", onAbort),
      });
    });
    const lines = [
      revealInvisible(request.prompt),
      ...request.options.map((option, index) => `${index + 1}. ${revealInvisible(option.label)}`),
    ];
    const how = request.options.length
      ? `Reply with a number or a label${request.allowCustom ? ", or write your own answer" : ""}.`
      : "Reply with your answer.";
    lines.push(request.suggestedAnswer ? `${how} (Suggested: ${request.suggestedAnswer})` : how);
    try {
      this.options.messenger.send(
        request.target,
        {
          text: lines.join("\n"),
          format: "plain",
          ...(request.options.length
            ? {
                buttons: request.options.map((option, index) => [
                  { id: `q:${id}:${index}`, label: option.label.slice(0, 60) },
                ]),
              }
            : {}),
        },
        "approval",
      );
    } catch (error) {
      this.options.logger.error({ err: error, question: id }, "question-send-failed");
      this.finish(id, { answer: null, reason: "cancelled" }, null);
    }
    return answer;
  }

  /** Button handler for `q:<id>:<n>`; false for other buttons. */
  handleButton(press: ButtonPress): boolean {
    const match = BUTTON_ID.exec(press.buttonId);
    if (!match) return false;
    const waiting = this.waiting.get(match[1]!);
    const option = waiting?.request.options[Number(match[2])];
    const target = { channel: press.channel, chatId: press.chatId, threadId: press.threadId };
    if (!waiting || !option) {
      this.options.messenger.send(target, { text: "That question is already closed.", format: "plain" });
      return true;
    }
    if (!this.mayAnswer(waiting.request, press)) {
      this.refuse(match[1]!, press);
      return true;
    }
    this.finish(match[1]!, { answer: option.label, option_id: option.id }, press);
    return true;
  }

  /**
   * A message in a session with a pending question, from someone who may answer it: it is the answer (an option's
   * number or label, or free text when allowed) instead of a new turn. Returns true when it was consumed.
   */
  answerFromMessage(message: InboundMessage, sessionKey: string, sender: SenderIdentity): boolean {
    for (const [id, waiting] of this.waiting) {
      if (waiting.request.sessionKey !== sessionKey || !this.mayAnswer(waiting.request, sender)) continue;
      const text = message.text.trim();
      const { options, allowCustom } = waiting.request;
      const byNumber = /^\d+$/.test(text) ? options[Number(text) - 1] : undefined;
      const byLabel = options.find(
        (option) =>
          option.label.toLowerCase() === text.toLowerCase() || option.id.toLowerCase() === text.toLowerCase(),
      );
      const chosen = byNumber ?? byLabel;
      if (chosen) this.finish(id, { answer: chosen.label, option_id: chosen.id }, sender);
      else if (allowCustom || options.length === 0) this.finish(id, { answer: text }, sender);
      else {
        this.options.messenger.send(
          waiting.request.target,
          {
            text: `Please answer with one of: ${options.map((option, index) => `${index + 1}. ${option.label}`).join(", ")}.`,
            format: "plain",
          },
          "approval",
        );
      }
      return true;
    }
    return false;
  }

  /** The questions waiting for an answer, oldest first (the dashboard lists them). */
  pending(): Array<{ id: string; request: QuestionRequest }> {
    return [...this.waiting].map(([id, waiting]) => ({ id, request: waiting.request }));
  }

  /**
   * An answer from the signed-in dashboard user, an owner (DESIGN.md "Dashboard"): it may answer a question
   * asked of an owner; one asked of a guest stays theirs. False when there is no such open question.
   */
  answerFromDashboard(id: string, answer: { optionIndex: number } | { text: string }): boolean {
    const waiting = this.waiting.get(id);
    if (waiting?.request.askedOf.role !== "owner") return false;
    const by = { channel: "web", userId: "dashboard" };
    if ("optionIndex" in answer) {
      const option = waiting.request.options[answer.optionIndex];
      if (!option) return false;
      this.finish(id, { answer: option.label, option_id: option.id }, by);
      return true;
    }
    const text = answer.text.trim();
    if (!text || !(waiting.request.allowCustom || waiting.request.options.length === 0)) return false;
    this.finish(id, { answer: text }, by);
    return true;
  }

  /** Questions waiting for an answer in this process. */
  get pendingCount(): number {
    return this.waiting.size;
  }

  /** The person asked, or — when that is an owner — any owner of the channel. */
  private mayAnswer(request: QuestionRequest, who: { channel: string; userId: string }): boolean {
    if (who.channel !== request.target.channel) return false;
    if (who.userId === request.askedOf.userId) return true;
    return (
      request.askedOf.role === "owner" && this.options.authority().roleOf(who.channel, who.userId) === "owner"
    );
  }

  private refuse(id: string, press: ButtonPress): void {
    this.options.logger.warn({ question: id, userId: press.userId }, "question-answer-refused");
    this.options.messenger.send(
      { channel: press.channel, chatId: press.chatId, threadId: press.threadId },
      { text: "Only the person asked can answer this question.", format: "plain" },
      "approval",
    );
  }

  private finish(id: string, answer: QuestionAnswer, by: { channel: string; userId: string } | null): void {
    const waiting = this.waiting.get(id);
    if (!waiting) return;
    this.waiting.delete(id);
    clearTimeout(waiting.timer);
    waiting.cleanup();
    const status = answer.answer !== null ? "answered" : answer.reason;
    this.options.db
      .prepare(
        "UPDATE questions SET status = ?, answer = ?, option_id = ?, answered_by = ?, answered_at = ? WHERE id = ?",
      )
      .run(
        status,
        answer.answer,
        answer.answer !== null ? (answer.option_id ?? null) : null,
        by ? `${by.channel}:${by.userId}` : null,
        this.clock.now(),
        id,
      );
    this.options.logger.info({ question: id, status }, "question-answered");
    waiting.resolve(answer);
  }
}
