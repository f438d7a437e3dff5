import type { Logger } from "pino";
import { z } from "zod";
import { safeParseJson } from "../lib/parse-json.js";
import { describeLlmError } from "../llm/errors.js";
import { freezeMessage } from "../llm/frozen-message.js";
import type { ChatMessage, ChatModel, CompletionResult, RequestMessage, ToolCall } from "../llm/types.js";
import type { AssistantStep, JournalStep } from "../store/step-journal.js";
import type { AgentProfile } from "./agents.js";
import type { ApprovalDecision } from "./approvals.js";
import type { ImagePart } from "./media.js";
import type { SpendPort, SpendScope } from "./spend.js";
import { parseTextToolCalls } from "./text-tool-calls.js";
import type { ApprovalSteps, ToolCallContext, ToolRuntime } from "./tool-runtime.js";

export interface AgentLoopDeps {
  model: ChatModel;
  tools: ToolRuntime;
  logger: Logger;
  maxIterations: number;
  /** For user-facing LLM error messages. */
  llm: { baseUrl?: string; timeoutMs: number };
  /** Budget check before every LLM call; null when none is set up. (The provider writes the ledger.) */
  spend?: SpendPort | null;
  /** `llm.textToolCalls`: also accept tool calls written in the answer text. */
  textToolCalls?: boolean;
  /** `llm.vision`: `auto` retries without the images when the model refuses them. */
  vision?: "auto" | boolean;
}

export interface TurnInput {
  agent: AgentProfile;
  /** The model to ask (a chat's `/model` choice); default the agent's. */
  model?: string;
  systemPrompt: string;
  history: ChatMessage[];
  userText: string;
  /** Images sent with the user's text in this turn's requests (not kept in history). */
  images?: ImagePart[];
  toolNames: string[];
  context: ToolCallContext;
  /** What the turn's LLM calls count against (budgets, ledger). */
  spendScope?: SpendScope;
  onTextDelta?: (delta: string) => void;
  /** What the turn is doing now, for its progress note. */
  onActivity?: (activity: string) => void;
  /** The turn's step journal (DESIGN.md → Durable turns): absent for turns that are not journaled. */
  journal?: TurnJournal;
}

/** Where a turn writes its steps, and the steps a cut-off run of it already wrote. */
export interface TurnJournal {
  /** Steps of an earlier run of this turn (empty for a fresh turn): it resumes after them. */
  steps: JournalStep[];
  /** Writes one step; returns once it is stored (before the next step starts). */
  write(step: JournalStep): void;
  /** Runs `write` in one transaction: a step's journal row with its ledger and trace rows. */
  atomically(write: () => void): void;
  now(): number;
}

/** What a call that was running when the process died returns to the model, when its tool is not read-only. */
export function outcomeUnknownText(tool: string): string {
  return JSON.stringify({
    ok: false,
    error: {
      code: "tool.outcome_unknown",
      message: `The ${tool} call was running when Magpie restarted, so whether it took effect is unknown. Check (e.g. read what it would have changed) before doing it again, or tell the user.`,
    },
  });
}

export type TurnStatus = "ok" | "error" | "aborted" | "max_iterations" | "budget" | "loop";

export interface TurnOutcome {
  status: TurnStatus;
  /** The reply for the user (the final answer, or a short error explanation). */
  reply: string;
  /** Messages to persist in history: the user message, tool rounds and the final answer. */
  newMessages: ChatMessage[];
  iterations: number;
  toolCalls: number;
  errorCode?: string;
}

/** The same call (name and arguments) this many times in one turn ends it: a model stuck in a loop. */
const LOOP_LIMIT = 3;
/** This many steps in a row whose every call was refused (tool set, guard, budget) end the turn. */
const REFUSED_STEPS_LIMIT = 3;

/**
 * One agent turn: system prompt + history + user text → LLM → tool calls … until a final answer or
 * `maxIterations`. Before each LLM call the budgets are checked (a call at or past a cap is not made), after it
 * the usage is recorded. Never throws: LLM failures become a short reply, tool failures go back to the model.
 */
export async function runAgentTurn(deps: AgentLoopDeps, input: TurnInput): Promise<TurnOutcome> {
  const { signal } = input.context;
  // The turn's messages are frozen, one object each for every request of the turn: their redacted copies and request
  // bytes are kept by them (src/llm/frozen-message.ts, issue 35).
  let userMessage: ChatMessage = freezeMessage({ role: "user", content: input.userText });
  const systemMessage: RequestMessage = freezeMessage({ role: "system", content: input.systemPrompt });
  const newMessages: ChatMessage[] = [userMessage];
  const specs = deps.tools.specs(input.toolNames);
  const model = input.model ?? input.agent.model;
  const seenCalls = new Map<string, number>();
  // Calls a rule refused this turn: asking for one again ends the turn instead of refusing it again.
  const refusedCalls = new Set<string>();
  let refusedSteps = 0;
  let toolCalls = 0;
  let fallbackModel: string | null = null;
  let images = input.images ?? [];
  const journal = input.journal;
  let firstIteration = 1;
  if (journal && journal.steps.length > 0) {
    // Resuming a cut-off turn: its journaled steps are replayed, never run again.
    const replayed = await replayJournal(deps, input, journal, newMessages);
    for (const [key, count] of replayed.seenCalls) seenCalls.set(key, count);
    for (const key of replayed.refusedCalls) refusedCalls.add(key);
    toolCalls = replayed.toolCalls;
    firstIteration = replayed.steps + 1;
    if (signal.aborted) return aborted(newMessages, replayed.steps, toolCalls);
  }

  for (let iteration = firstIteration; iteration <= deps.maxIterations; iteration++) {
    if (signal.aborted) return aborted(newMessages, iteration - 1, toolCalls);
    // The images ride on the current user message of each request; history keeps the text only.
    const current: RequestMessage =
      images.length > 0
        ? { role: "user", content: [{ type: "text", text: input.userText }, ...images] }
        : userMessage;
    const messages: RequestMessage[] = [systemMessage, ...input.history, current, ...newMessages.slice(1)];
    if (deps.spend && input.spendScope) {
      const decision = deps.spend.beforeCall(input.spendScope);
      if (!decision.allowed) {
        newMessages.push({ role: "assistant", content: decision.message });
        return {
          status: "budget",
          reply: decision.message,
          newMessages,
          iterations: iteration - 1,
          toolCalls,
          errorCode: "budget.exceeded",
        };
      }
    }
    let result: CompletionResult;
    input.onActivity?.("waiting for the model");

    try {
      result = await deps.model.complete(
        { model, messages, tools: specs.length > 0 ? specs : undefined },
        // The provider files the call's ledger row under the scope and publishes its one `llmCall` event.
        { signal, onTextDelta: input.onTextDelta, scope: input.spendScope },
      );
    } catch (error) {
      if (signal.aborted) return aborted(newMessages, iteration - 1, toolCalls);
      const failure = describeLlmError(error, { ...deps.llm, model });
      if (images.length > 0 && deps.vision === "auto" && isRefusal(failure.status)) {
        // llm.vision auto: a model that can't take images gets the text alone, and is told so.
        deps.logger.info({ model, status: failure.status }, "vision-refused-text-only");
        images = [];
        userMessage = freezeMessage({
          role: "user",
          content: `${input.userText}\n[The model could not take the image(s) sent with this message; only their description is here.]`,
        });
        newMessages[0] = userMessage;
        iteration--;
        continue;
      }
      deps.logger.warn(
        { code: failure.code, status: failure.status, err: error, session: input.context.sessionKey },
        "llm-call-failed",
      );
      // Tools that already ran stay in history (their calls, their results, then the failure the chat was told):
      // the next turn's model sees what was done and doesn't do it again.
      if (newMessages.length > 1) newMessages.push({ role: "assistant", content: failure.userMessage });
      return {
        status: "error",
        reply: failure.userMessage,
        newMessages,
        iterations: iteration,
        toolCalls,
        errorCode: failure.code,
      };
    }
    if (result.answeredBy?.fallback) fallbackModel = result.answeredBy.model;
    else if (result.answeredBy) fallbackModel = null;

    let calls = result.toolCalls;
    let content = result.content;
    if (calls.length === 0 && deps.textToolCalls && content) {
      const parsed = parseTextToolCalls(content, `text-${iteration}`);
      if (parsed.calls.length > 0) {
        deps.logger.info(
          { calls: parsed.calls.map((call) => call.function.name) },
          "text-tool-calls-accepted",
        );
        calls = parsed.calls;
        content = parsed.rest || null;
      }
    }

    if (calls.length === 0) {
      const answer = content?.trim() || "(The model returned an empty answer.)";
      newMessages.push({ role: "assistant", content: answer });
      // A reply produced by a fallback says so, in one short line (not stored in history).
      const reply = fallbackModel ? `${answer}\n\n_via ${fallbackModel}_` : answer;
      return { status: "ok", reply, newMessages, iterations: iteration, toolCalls };
    }

    const repeatedRefusal = calls.find((call) => refusedCalls.has(callKey(call)));
    if (repeatedRefusal) {
      const reply = `I stopped: the model asked again for a call that was refused (${repeatedRefusal.function.name} with the same arguments), so going on would only repeat the refusal. Tell me how to go on.`;
      return stopped(deps, input, newMessages, reply, iteration, toolCalls, repeatedRefusal.function.name);
    }
    const looping = calls.find((call) => {
      const key = callKey(call);
      const count = (seenCalls.get(key) ?? 0) + 1;
      seenCalls.set(key, count);
      return count >= LOOP_LIMIT;
    });
    if (looping) {
      const reply = `I stopped: the same tool call (${looping.function.name} with the same arguments) came ${LOOP_LIMIT} times in this turn, which looks like a loop. Tell me how to go on.`;
      deps.logger.warn(
        { tool: looping.function.name, session: input.context.sessionKey },
        "tool-loop-stopped",
      );
      newMessages.push({ role: "assistant", content: reply });
      return { status: "loop", reply, newMessages, iterations: iteration, toolCalls, errorCode: "turn.loop" };
    }

    const asked: AssistantStep = freezeMessage({ role: "assistant", content, tool_calls: calls });
    // The call's ledger and trace rows were written as it returned (by the provider and the trace's subscriber).
    // The step is journaled with its first call's start, in one transaction (nothing runs between the two).
    let askedStep: JournalStep | undefined = journal && {
      kind: "llm",
      message: asked,
      agent: input.agent.name,
      model,
      at: journal.now(),
    };
    newMessages.push(asked);
    let refusedNow = 0;
    for (const call of calls) {
      toolCalls++;
      if (!signal.aborted) input.onActivity?.(`running ${call.function.name}`);
      let output: string;
      if (signal.aborted)
        output = JSON.stringify({
          ok: false,
          error: { code: "tool.aborted", message: "The turn was stopped." },
        });
      else {
        output = await runCall(deps, input, call, askedStep);

        askedStep = undefined;
      }
      newMessages.push(freezeMessage({ role: "tool", tool_call_id: call.id, content: output }));
      if (isRefusedOutput(output)) {
        refusedCalls.add(callKey(call));
        refusedNow++;
      }
    }
    // No call started (the turn was stopped first): the step is journaled alone.
    if (askedStep) journal?.write(askedStep);
    if (signal.aborted) return aborted(newMessages, iteration, toolCalls);
    refusedSteps = refusedNow === calls.length ? refusedSteps + 1 : 0;
    if (refusedSteps >= REFUSED_STEPS_LIMIT) {
      const reply = `I stopped: every tool call of the last ${REFUSED_STEPS_LIMIT} steps was refused (tool set, guard or budget), so asking the model again would only be refused again. Tell me how to go on.`;
      return stopped(deps, input, newMessages, reply, iteration, toolCalls, calls[0]!.function.name);
    }
  }

  const reply = `I stopped after ${deps.maxIterations} steps (agent.maxIterations) without reaching a final answer. Tell me how to continue, or narrow the request.`;
  newMessages.push({ role: "assistant", content: reply });
  return { status: "max_iterations", reply, newMessages, iterations: deps.maxIterations, toolCalls };
}

/**
 * Runs one call, journaled: `call` before it starts (with `before`, the LLM step that asked for it, in one
 * transaction), `result` once it is back — in the transaction of the call's
 * audit and trace rows when the tool runtime offers one (`onResult`). A call cut off by a shutdown keeps no result:
 * its turn resumes it as a call that was running.
 */
async function runCall(
  deps: AgentLoopDeps,
  input: TurnInput,
  call: ToolCall,
  before?: JournalStep,
): Promise<string> {
  const journal = input.journal;
  if (!journal) return deps.tools.execute(call, input.toolNames, input.context);
  const { signal } = input.context;
  const started: JournalStep = { kind: "call", callId: call.id, at: journal.now() };
  // The steps written before the call runs, in one transaction. A read-only call that was running at a crash is run
  // again when its turn resumes, and one whose step was never written is simply asked for again: its start need not
  // be on disk before it runs. So the LLM step that asked for it and its start wait for its result's commit (with
  // the call's audit and trace rows) — one commit per step instead of two (issue 35, hot path). Anything journaled
  // in between (an approval asked or decided) writes them first, so the order on disk is the order they happened.
  let unwritten: JournalStep[] | undefined = before ? [before, started] : [started];
  const writeStarted = () => {
    if (!unwritten) return;
    const steps = unwritten;
    unwritten = undefined;
    journal.atomically(() => {
      for (const step of steps) journal.write(step);
    });
  };
  if (!(deps.tools.isReadOnly?.(call) ?? false)) writeStarted();
  let stored = false;
  const storeResult = (output: string) => {
    if (stored || signal.aborted) return;
    journal.atomically(() => {
      writeStarted();
      journal.write({ kind: "result", callId: call.id, output, at: journal.now() });
    });
    stored = true;
  };
  const approvals = approvalsOf(journal.steps, call.id);
  let nextApproval = 0;
  const approvalSteps: ApprovalSteps = {
    next: () => approvals[nextApproval++],
    asked: (approvalId) => {
      writeStarted();
      journal.write({ kind: "approval", callId: call.id, approvalId, at: journal.now() });
    },
    decided: (approvalId, decision) => {
      writeStarted();
      journal.write({ kind: "approval", callId: call.id, approvalId, decision, at: journal.now() });
    },
  };
  const output = await deps.tools.execute(call, input.toolNames, {
    ...input.context,
    onResult: storeResult,
    approvalSteps,
  });
  storeResult(output);
  return output;
}

/** A call's approvals in a journal, in the order it asked for them, each with its decision once made. */
function approvalsOf(
  steps: readonly JournalStep[],
  callId: string,
): Array<{ approvalId: string; decision?: ApprovalDecision }> {
  const approvals: Array<{ approvalId: string; decision?: ApprovalDecision }> = [];
  for (const step of steps) {
    if (step.kind !== "approval" || step.callId !== callId) continue;
    const known = approvals.find((approval) => approval.approvalId === step.approvalId);
    if (!known)
      approvals.push({ approvalId: step.approvalId, ...(step.decision ? { decision: step.decision } : {}) });
    else if (step.decision) known.decision = step.decision;
  }
  return approvals;
}

/**
 * Replays the journal of a cut-off run of this turn into `newMessages`: each journaled LLM step with its calls'
 * results. A call with a result is never run again; a call that was running when the process died runs again
 * only when its tool is read-only, else the model is told its outcome is unknown; a call that had not started
 * runs now.
 */
async function replayJournal(
  deps: AgentLoopDeps,
  input: TurnInput,
  journal: TurnJournal,
  newMessages: ChatMessage[],
): Promise<{ steps: number; toolCalls: number; seenCalls: Map<string, number>; refusedCalls: Set<string> }> {
  const { signal } = input.context;
  const results = new Map<string, string>();
  const started = new Set<string>();
  for (const step of journal.steps) {
    if (step.kind === "result") results.set(step.callId, step.output);
    else if (step.kind === "call") started.add(step.callId);
  }
  const seenCalls = new Map<string, number>();
  const refusedCalls = new Set<string>();
  let steps = 0;
  let toolCalls = 0;
  let rerun = 0;
  let unknown = 0;
  for (const step of journal.steps) {
    if (step.kind !== "llm") continue;
    steps++;
    newMessages.push(freezeMessage(step.message));
    for (const call of step.message.tool_calls ?? []) {
      toolCalls++;
      const key = callKey(call);
      let output = results.get(call.id);
      if (output === undefined) {
        if (signal.aborted) break;
        // Still waiting for a person (or refused by one) when cut off: it never ran, so it runs now (asking again).
        const waiting = approvalsOf(journal.steps, call.id).some(
          (approval) => approval.decision !== "approved",
        );
        if (started.has(call.id) && !waiting && !(deps.tools.isReadOnly?.(call) ?? false)) {
          output = outcomeUnknownText(call.function.name);
          journal.write({ kind: "result", callId: call.id, output, at: journal.now() });
          unknown++;
          await deps.tools.replayed?.(call, output, input.context);
        } else {
          if (started.has(call.id)) rerun++;
          output = await runCall(deps, input, call);
        }
      } else await deps.tools.replayed?.(call, output, input.context);
      // The loop guard counts what the model asked for and got an answer to. A call cut off by a crash (its outcome
      // unknown) does not count: asking for it again after checking is the designed answer to the crash, and a
      // turn cut off by several restarts in a row would otherwise end as a "loop" for doing just that.
      if (output !== outcomeUnknownText(call.function.name))
        seenCalls.set(key, (seenCalls.get(key) ?? 0) + 1);
      if (isRefusedOutput(output)) refusedCalls.add(key);
      newMessages.push(freezeMessage({ role: "tool", tool_call_id: call.id, content: output }));
    }
  }
  deps.logger.info(
    { session: input.context.sessionKey, steps, toolCalls, rerun, outcomeUnknown: unknown },
    "turn-resumed",
  );
  return { steps, toolCalls, seenCalls, refusedCalls };
}

/** Ends a turn cut off by the loop guard: its message is the reply and closes the turn's history. */
function stopped(
  deps: AgentLoopDeps,
  input: TurnInput,
  newMessages: ChatMessage[],
  reply: string,
  iterations: number,
  toolCalls: number,
  tool: string,
): TurnOutcome {
  deps.logger.warn({ tool, session: input.context.sessionKey }, "tool-refusals-stopped");
  newMessages.push({ role: "assistant", content: reply });
  return { status: "loop", reply, newMessages, iterations, toolCalls, errorCode: "turn.refused_loop" };
}

/** A call's identity for the loop guard: its name and its arguments compared by meaning. */
function callKey(call: ToolCall): string {
  return `${call.function.name}\u0000${canonicalArguments(call.function.arguments)}`;
}

/** The tool layer's answer to a call a rule refused: `{"ok":false,"refused":true,…}` (src/tools/define-tool.ts). */
const refusedShape = z.looseObject({ refused: z.unknown() });

function isRefusedOutput(output: string): boolean {
  if (!output.startsWith('{"ok":false,"refused":true')) return false;
  const parsed = safeParseJson(output, refusedShape);
  return parsed.success && parsed.data.refused === true;
}

/** A 4xx other than auth and rate limits: the request itself was refused (e.g. image parts a model can't take). */
function isRefusal(status: number | undefined): boolean {
  return status !== undefined && status >= 400 && status < 500 && ![401, 403, 408, 409, 429].includes(status);
}

/** Arguments compared by meaning: key order and whitespace don't make a call new. */
function canonicalArguments(text: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(text || "{}")));
  } catch {
    return text.trim();
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value as Record<string, unknown>)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * A stopped turn's history: its request and every completed tool round (an assistant message with tool calls and
 * a result for each — a call cut off by the stop has its "stopped" result), so the next turn's model knows what
 * already took effect and doesn't do it twice. A half-finished round (a call without its result) and what follows
 * it are dropped: OpenAI-compatible APIs refuse tool calls without all their results.
 */
/** What history says after a stopped turn's completed rounds. */
export const STOPPED_NOTE = "(This request was stopped before it finished.)";

function aborted(newMessages: ChatMessage[], iterations: number, toolCalls: number): TurnOutcome {
  return {
    status: "aborted",
    reply: "Stopped.",
    newMessages: [...completedRounds(newMessages), { role: "assistant", content: STOPPED_NOTE }],
    iterations,
    toolCalls,
  };
}

/** The messages up to the first tool round whose calls do not all have their result next to them. */
export function completedRounds(messages: ChatMessage[]): ChatMessage[] {
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    const answered = new Set<string>();
    let next = index + 1;
    for (; next < messages.length; next++) {
      const result = messages[next]!;
      if (result.role !== "tool") break;
      answered.add(result.tool_call_id);
    }
    if (!message.tool_calls.every((call) => answered.has(call.id))) return messages.slice(0, index);
    index = next - 1;
  }
  return messages;
}

export type { ToolCall };
