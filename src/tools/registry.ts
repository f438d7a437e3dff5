import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { ApprovalDecision, ApprovalGate, QuestionAnswer } from "../core/approvals.js";
import { type EventPublisher, NO_EVENTS } from "../core/events.js";
import type { ToolCallContext, ToolRuntime } from "../core/tool-runtime.js";
import { errorMessage } from "../lib/errors.js";
import { safeParseJson } from "../lib/parse-json.js";
import type { LlmToolSpec, ToolCall } from "../llm/types.js";
import { GuardRefusal } from "../security/guard-refusal.js";
import { ProvenanceStore } from "../security/provenance-store.js";
import { recordShellWrites, type ShellReads, shellReads } from "../security/shell-provenance.js";
import {
  notePage,
  recordWrites,
  type Sink,
  sinkOf,
  sourcesOf,
  testHooks,
  writeTargets,
} from "../security/untrusted.js";
import { fileKey } from "../security/writes-in-flight.js";
import { atomic } from "../store/atomic.js";
import type { AuditEntry } from "../store/audit.js";
import { SessionScratch, type ToolContext, type ToolServices } from "./context.js";
import { type Tool, ToolError, type ToolOutput, toolErrorText } from "./define-tool.js";
import { describeZodError, zodToJsonSchema } from "./json-schema.js";
import { cleanToolSchema, resolveSchemaDialect, type SchemaDialect } from "./schema-dialect.js";
import type { SpillStore } from "./spill.js";
import { ALWAYS_AVAILABLE, DEFAULT_SET, NEVER_FOR_SUBAGENTS, SUBAGENT_SET } from "./tool-sets.js";
import { safeHttpOf } from "./web/safe-http-of.js";

/** Broken tool arguments longer than this are refused instead of repaired (see parseArguments). */
const MAX_REPAIR_CHARS = 10_000;

export interface ToolRegistryOptions {
  config: MagpieConfig;
  logger: Logger;
  services: ToolServices;
  approvals: ApprovalGate;
  spill?: SpillStore;
  /** Every call is published as a `toolCall` event, as the audit records it (default: publishes nothing). */
  events?: EventPublisher;
}

const EXCERPT_CHARS = 500;
/** The approval class of every sink after untrusted content: one denial covers the rest of the turn. */
const UNTRUSTED_CLASS = "untrusted-content";

/** Holds every tool, resolves tool sets, and runs calls: validate → approve → execute → redact → audit → spill. */
export class ToolRegistry implements ToolRuntime {
  private readonly tools = new Map<string, Tool>();
  private readonly dynamicSources = new Map<string, string[]>();
  /** Specs are cleaned once per tool (the dialect is fixed by config). */
  private readonly specCache = new WeakMap<Tool, LlmToolSpec>();
  private dialectCache: SchemaDialect | null = null;
  readonly scratch = new SessionScratch();
  private provenanceStore: ProvenanceStore | null = null;

  constructor(private readonly options: ToolRegistryOptions) {}

  register(...tools: Tool[]): this {
    for (const tool of tools) {
      if (this.tools.has(tool.name)) throw new Error(`Tool "${tool.name}" is registered twice.`);
      this.tools.set(tool.name, tool as Tool);
    }
    return this;
  }

  /**
   * Replaces the tools a source offers at run time (an MCP server's, after `tools/list`): its previous tools go,
   * these come. A name taken by another tool is skipped and returned.
   */
  replaceDynamic(source: string, tools: Tool[]): string[] {
    for (const name of this.dynamicSources.get(source) ?? []) this.tools.delete(name);
    const added: string[] = [];
    const skipped: string[] = [];
    for (const tool of tools) {
      if (this.tools.has(tool.name)) skipped.push(tool.name);
      else {
        this.tools.set(tool.name, tool);
        added.push(tool.name);
      }
    }
    this.dynamicSources.set(source, added);
    return skipped;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** Names of the tools enabled under the current config. */
  enabledNames(): string[] {
    return [...this.tools.values()]
      .filter((tool) => tool.isEnabled?.(this.options.config) ?? true)
      .map((tool) => tool.name);
  }

  resolveToolSet(toolSet: string | string[]): string[] {
    const enabled = new Set(this.enabledNames());
    let names: string[];
    if (Array.isArray(toolSet)) names = toolSet;
    else if (toolSet === "full") names = [...enabled];
    else if (toolSet === "subagent") names = [...SUBAGENT_SET];
    else names = [...DEFAULT_SET];
    if (toolSet === "subagent")
      names = names.filter((name) => !NEVER_FOR_SUBAGENTS.some((rule) => rule.test(name)));
    const granted = names.filter((name) => enabled.has(name));
    if (granted.length > 0) for (const name of ALWAYS_AVAILABLE) if (enabled.has(name)) granted.push(name);
    return [...new Set(granted)];
  }

  /** The schema dialect tool specs are cleaned for (`llm.schemaDialect`, `auto` from `llm.baseUrl`). */
  get schemaDialect(): SchemaDialect {
    const { llm } = this.options.config;
    this.dialectCache ??= resolveSchemaDialect(llm.schemaDialect ?? "auto", llm.baseUrl);
    return this.dialectCache;
  }

  specs(toolNames: string[]): LlmToolSpec[] {
    return toolNames.flatMap((name) => {
      const tool = this.tools.get(name);
      if (!tool) return [];
      let spec = this.specCache.get(tool);
      if (!spec) {
        const raw = tool.parameters ?? zodToJsonSchema(tool.inputSchema);
        spec = {
          type: "function" as const,
          function: {
            name: tool.name,
            description: tool.description,
            parameters: cleanToolSchema(raw, this.schemaDialect),
          },
        };
        this.specCache.set(tool, spec);
      }
      return [spec];
    });
  }

  async execute(call: ToolCall, allowedTools: string[], callContext: ToolCallContext): Promise<string> {
    const started = performance.now();
    const { redactor } = this.options.services;
    const name = call.function.name;
    const audit: AuditEntry = {
      sessionKey: callContext.sessionKey,
      agent: callContext.agent,
      sender: `${callContext.sender.channel}:${callContext.sender.userId} (${callContext.sender.role})`,
      tool: name,
      arguments: redactor.redact(call.function.arguments || "{}"),
      verdict: "allow",
      outcome: "ok",
      durationMs: 0,
    };
    const warnings: string[] = [];
    let text: string;
    try {
      const output = await this.run(call, allowedTools, callContext, audit, warnings);
      text = typeof output === "string" ? output : JSON.stringify(output, null, 2);
      if (warnings.length > 0) {
        audit.verdict = audit.verdict === "allow" ? "warn" : audit.verdict;
        text = `${warnings.map((warning) => `Warning: ${warning}`).join("\n")}\n${text}`;
      }
    } catch (error) {
      const code = error instanceof ToolError ? error.code : "tool.failed";
      const message =
        error instanceof ToolError ? error.message : `Tool '${name}' failed: ${errorMessage(error)}`;
      if (callContext.signal.aborted && !(error instanceof ToolError)) {
        text = toolErrorText("tool.aborted", `Tool '${name}' was stopped.`);
      } else {
        text = toolErrorText(code, message, isRefusal(error));
      }
      if (error instanceof GuardRefusal) audit.verdict = "deny";
      audit.outcome = audit.verdict === "deny" || code.startsWith("approval.") ? "denied" : "error";
      audit.errorCode = code;
      if (!(error instanceof ToolError))
        this.options.logger.warn({ tool: name, err: error }, "tool-call-failed");
    }
    text = redactor.redact(text);
    audit.durationMs = performance.now() - started;
    audit.resultExcerpt = text.slice(0, EXCERPT_CHARS);
    const output = this.options.spill ? this.options.spill.maybeSpill(text, name) : text;
    // The call's audit row, its trace row (the event's subscriber writes it) and its journal step: one transaction.
    atomic(this.options.services.store.db, () => {
      try {
        this.options.services.store.audit.record(audit);
      } catch (error) {
        this.options.logger.error({ err: error, tool: name }, "audit-write-failed");
      }
      (this.options.events ?? NO_EVENTS).toolCall({
        ...(callContext.budget ? { turnId: callContext.budget.turnId } : {}),
        sessionKey: callContext.sessionKey,
        tool: name,
        verdict: audit.verdict,
        ok: audit.outcome === "ok",
        ...(audit.errorCode ? { errorCode: audit.errorCode } : {}),
        ...(callContext.turnApprovals?.provenance.tainted
          ? { untrusted: callContext.turnApprovals.provenance.describe() }
          : {}),
        durationMs: Math.round(audit.durationMs),
      });
      callContext.onResult?.(output);
    });
    return output;
  }

  /** The call only reads: its tool is `readOnly` (or says so for these arguments). Unknown or broken: false. */
  isReadOnly(call: ToolCall): boolean {
    const tool = this.tools.get(call.function.name);
    if (!tool?.readOnlyFor) return tool?.readOnly === true;
    const parsed = safeParseJson(call.function.arguments || "{}", tool.inputSchema);
    return parsed.success && tool.readOnlyFor(parsed.data);
  }

  /**
   * A journaled call's result put back into its resumed turn (DESIGN.md → Durable turns): the untrusted sources it
   * brought in count again, so the rule of two still asks (or refuses) after a restart. A call whose outcome is
   * unknown counts as failed: its sources (a server's answer) may have come in.
   */
  async replayed(call: ToolCall, output: string, callContext: ToolCallContext): Promise<void> {
    const provenance = callContext.turnApprovals?.provenance;
    const tool = this.tools.get(call.function.name);
    if (!provenance || !tool || output.startsWith('{"ok":false,"refused":true')) return;
    const parsed = safeParseJson(call.function.arguments || "{}", tool.inputSchema);
    if (!parsed.success) return;
    const input: Record<string, unknown> =
      typeof parsed.data === "object" && parsed.data !== null
        ? Object.fromEntries(Object.entries(parsed.data))
        : {};
    const failed = output.startsWith('{"ok":false');
    try {
      notePage(tool, output, provenance, failed);
      const sources = await sourcesOf({
        tool,
        input,
        failed,
        output,
        agent: callContext.agent,
        config: this.options.config,
        homeDir: this.options.services.homeDir,
        store: this.provenance,
      });
      for (const source of sources) provenance.add(source);
      // A shell command's reads, judged again now: the files it wrote were recorded with its turn's sources then.
      if (tool.name === "shell")
        for (const source of (
          await shellReads(input, this.options.config, this.provenance, this.options.services.homeDir)
        ).sources)
          provenance.add(source);
    } catch (error) {
      this.options.logger.warn({ err: error, tool: tool.name }, "provenance-replay-failed");
    }
  }

  private async run(
    call: ToolCall,
    allowedTools: string[],
    callContext: ToolCallContext,
    audit: AuditEntry,
    warnings: string[],
  ): Promise<ToolOutput> {
    const name = call.function.name;
    const tool = this.tools.get(name);
    if (!tool) {
      throw new ToolError(
        "tool.not_available",
        `There is no tool named '${name}' available here. Available tools: ${allowedTools.join(", ") || "none"}.`,
      );
    }
    // Checked at dispatch, not only by which schemas were offered: a turn cannot name its way out of its set.
    const forbidden = callContext.origin === "spawn" && NEVER_FOR_SUBAGENTS.some((rule) => rule.test(name));
    if (forbidden || !allowedTools.includes(name)) {
      throw new GuardRefusal(
        "tool.not_in_tool_set",
        `'${name}' is not in this turn's tool set${callContext.origin === "user" ? "" : ` (a ${callContext.origin} turn)`}; nothing was done. Tools you may use: ${allowedTools.join(", ") || "none"}.`,
      );
    }
    const rawInput = await this.parseArguments(name, call.function.arguments);
    const parsed = tool.inputSchema.safeParse(rawInput);
    if (!parsed.success) {
      throw new ToolError(
        "tool.invalid_arguments",
        `Invalid arguments for '${name}': ${describeZodError(parsed.error)}. Fix them and call the tool again.`,
      );
    }
    const provenance = callContext.turnApprovals?.provenance;
    const hooks = testHooks(this.options.services.untrustedTest);
    const rules = provenance && !hooks.rulesOff ? provenance : null;
    // Set once the owner approved this exact call after untrusted content: the call's own approvals (the file
    // guard's Warn, a tool's risk:high) don't ask a second time for what the owner just saw.
    let ownerSawIt = false;
    const context: ToolContext = {
      ...callContext,
      // What leaves a tainted turn passes the output filter (src/tools/outbound-check.ts): read at each send.
      isTainted: () => rules?.tainted === true || callContext.isTainted?.() === true,
      config: this.options.config,
      logger: this.options.logger,
      services: this.options.services,
      scratch: this.scratch,
      allowedTools,
      warn: (message) => warnings.push(message),
      requireApproval: async (action, reason, options) =>
        ownerSawIt
          ? "approved"
          : await this.requireApproval(tool, action, reason, callContext, audit, options?.classes),
      ask: (question) => this.ask(question, callContext),
    };
    const exact = `${name} ${this.options.services.redactor.redact(JSON.stringify(parsed.data))}`;
    // The rule of two (src/security/untrusted.ts), for every tool in one place: a turn holding untrusted content
    // asks the owner before a sink, or is refused one when no owner is there.
    const input: Record<string, unknown> =
      typeof parsed.data === "object" && parsed.data !== null
        ? Object.fromEntries(Object.entries(parsed.data))
        : {};
    if (rules?.tainted) {
      const sink = await sinkOf(tool, input, {
        config: this.options.config,
        provenance: rules,
        target: callContext.target,
        allowedTools,
        role: callContext.sender.role,
        ownerHere: callContext.canAsk && callContext.approver !== undefined,
        ssrfRefuses: (url) => safeHttpOf(context).refusesWithoutLookup(url),
        homeDir: this.options.services.homeDir,
        unvouchedHosts: hooks.unvouchedHosts,
        reach: tool.startsTurnWith?.(parsed.data, context),
      });
      if (sink) ownerSawIt = await this.untrustedApproval(tool, sink, exact, callContext, audit);
      // What leaves the turn (message text, URL, request body) is checked at each tool's send point by the output
      // filter (src/security/output-filter.ts through `context.isTainted`).
    }
    if (!ownerSawIt) {
      const approval = await this.requireApproval(tool, exact, `risk:${tool.risk}`, callContext, audit);
      if (approval !== "approved") throw approvalError(name, approval);
    }
    if (!rules) return await tool.execute(parsed.data, context);
    const { existed, keys } = await writeTargets(
      tool,
      input,
      callContext.agent,
      this.options.config,
      this.options.services.homeDir,
    );
    // A shell command's reads are judged before it runs: a file it writes and then reads is its own output.
    const shell =
      tool.name === "shell"
        ? await shellReads(input, this.options.config, this.provenance, this.options.services.homeDir)
        : undefined;
    if (shell) for (const file of shell.before.keys()) keys.push(fileKey(file));
    // Another turn writing the same file or memory meanwhile: each record names both turns' sources.
    const ended = this.provenance.inFlight.begin(keys, rules);
    let output: string | undefined;
    let failure: unknown;
    try {
      const result = await tool.execute(parsed.data, context);
      // Encoded once, for the provenance check and the caller (which takes a string as it is).
      output = typeof result === "string" ? result : JSON.stringify(result, null, 2);
      return output;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // A guard's refusal did nothing and read nothing: it adds no source and records no write.
      try {
        if (!(failure instanceof GuardRefusal))
          await this.afterCall(
            tool,
            input,
            output,
            callContext,
            rules,
            existed,
            failure !== undefined,
            shell,
          );
      } finally {
        ended();
      }
    }
  }

  /** The provenance store (migration 032), from the services or made on the store's database. */
  private get provenance(): ProvenanceStore {
    this.provenanceStore ??=
      this.options.services.provenance ?? new ProvenanceStore(this.options.services.store.db);
    return this.provenanceStore;
  }

  /**
   * After a call of a turn under the rule of two: what its result brought into the turn (a page, a file Magpie
   * didn't write in an owner's turn, a memory stored by a tainted turn), and the provenance of what it wrote.
   * A result that failed still counts as read (an error can carry the server's text), except a local file's.
   */
  private async afterCall(
    tool: Tool,
    input: Record<string, unknown>,
    output: string | undefined,
    callContext: ToolCallContext,
    provenance: NonNullable<ToolCallContext["turnApprovals"]>["provenance"],
    existed: ReadonlySet<string>,
    failed: boolean,
    shell?: ShellReads,
  ): Promise<void> {
    const call = {
      tool,
      input,
      failed,
      output: output ?? "",
      agent: callContext.agent,
      config: this.options.config,
      homeDir: this.options.services.homeDir,
      store: this.provenance,
    };
    try {
      notePage(tool, call.output, provenance, failed);
      if (output !== undefined) await recordWrites(call, provenance, existed);
      for (const source of await sourcesOf(call)) provenance.add(source);
      if (shell) {
        // Partial output of a command that failed or timed out is output too.
        for (const source of shell.sources) provenance.add(source);
        recordShellWrites(shell, provenance, this.provenance);
      }
    } catch (error) {
      // A file without a record counts as untrusted later: failing to record is the safe side.
      this.options.logger.warn({ err: error, tool: tool.name }, "provenance-record-failed");
    }
  }

  /**
   * A sink in a turn holding untrusted content: asks the owner in an interactive turn (saying after reading what,
   * and the exact action), refuses in an unattended one unless the job listed the tool in `allowAfterUntrusted`.
   * One denial covers the rest of the turn: the goal is not reachable through another tool. True when approved.
   */
  private async untrustedApproval(
    tool: Tool,
    sink: Sink,
    exact: string,
    callContext: ToolCallContext,
    audit: AuditEntry,
  ): Promise<boolean> {
    const turn = callContext.turnApprovals!;
    const why = turn.provenance.describe();
    const approver = callContext.approver;
    if (!callContext.canAsk || !approver) {
      if (turn.provenance.allowAfterUntrusted.includes(tool.name)) {
        this.options.logger.info(
          { tool: tool.name, rule: sink.rule, session: callContext.sessionKey },
          "untrusted-sink-allowed-by-job",
        );
        return false;
      }
      audit.verdict = "deny";
      throw new GuardRefusal(
        sink.rule,
        `Refused (${sink.rule}): this ${callContext.origin === "user" ? "guest's" : callContext.origin} turn holds untrusted content (${why}), and '${sink.action}' communicates or changes lasting state. No owner is here to approve it, so nothing was done${callContext.origin === "schedule" || callContext.origin === "event" ? ` (the job may list '${tool.name}' in allowAfterUntrusted)` : ""}. Report what you found instead.`,
      );
    }
    if (turn.isDenied(UNTRUSTED_CLASS)) {
      audit.verdict = "deny";
      throw new GuardRefusal(
        "untrusted.denied_earlier",
        `The owner denied an action in this turn after untrusted content (${why}), so '${tool.name}' was not asked about and nothing was done. Don't try it another way; answer the owner in this chat.`,
      );
    }
    const decision = await this.askOwner(
      tool,
      `${this.options.services.redactor.redact(sink.action)}\n\n${exact}`,
      `${sink.rule}: untrusted content, ${why}`,
      approver,
      callContext,
    );
    audit.verdict =
      decision === "approved" ? "approved" : decision === "timeout" ? "timeout" : "denied-by-user";
    if (decision === "approved") return true;
    audit.outcome = "denied";
    turn.deny(UNTRUSTED_CLASS);
    throw approvalError(tool.name, decision);
  }

  /**
   * The call's arguments as JSON; what small local models get wrong (trailing commas, single quotes, unquoted
   * keys, code fences, missing closing braces) is repaired with jsonrepair first, and the repair logged. What
   * still isn't JSON goes back to the model as an error it can act on.
   */
  private async parseArguments(tool: string, text: string | undefined): Promise<unknown> {
    if (!text?.trim()) return {};
    try {
      return JSON.parse(text);
    } catch {
      // Repaired below.
    }
    if (text.length > MAX_REPAIR_CHARS) {
      // jsonrepair is quadratic on some broken input (an unterminated string or array: 40 KB took 1.4 s, a
      // megabyte would hold the event loop for minutes), and the model decides the size. The sloppy JSON of
      // small models is short; a long argument has to be valid JSON.
      throw new ToolError(
        "tool.invalid_json",
        `The arguments for '${tool}' are not valid JSON, and at ${text.length} characters too long to repair (the limit is ${MAX_REPAIR_CHARS}). Send a valid JSON object.`,
      );
    }
    try {
      // Loaded on the first broken call only: well-formed arguments never need it.
      const { jsonrepair } = await import("jsonrepair");
      const repaired = jsonrepair(withoutFence(text));
      const value: unknown = JSON.parse(repaired);
      this.options.logger.info(
        { tool, original: text.slice(0, 200), repaired: repaired.slice(0, 200) },
        "tool-arguments-repaired",
      );
      return value;
    } catch {
      throw new ToolError(
        "tool.invalid_json",
        `The arguments for '${tool}' are not valid JSON (and could not be repaired): ${text.slice(0, 200)}. Send a JSON object.`,
      );
    }
  }

  /** Puts a question to this turn's person in its chat; the wait holds no turn slot. */
  private async ask(
    question: Parameters<ToolContext["ask"]>[0],
    callContext: ToolCallContext,
  ): Promise<QuestionAnswer> {
    const ask = this.options.approvals.ask;
    // Someone must be there: the chat's own turn (an owner's or a guest's), not a job or a subagent.
    if (
      !ask ||
      !(callContext.origin === "user" || callContext.origin === "event" || callContext.origin === "delegate")
    )
      throw noOneToAsk(callContext.origin);
    if (callContext.origin === "delegate" && !callContext.canAsk) throw noOneToAsk(callContext.origin);
    const run = () =>
      ask({
        ...question,
        sessionKey: callContext.sessionKey,
        target: callContext.approver?.target ?? callContext.target,
        askedOf: callContext.approver?.identity ?? callContext.sender,
        signal: callContext.signal,
      });
    return callContext.whileWaiting ? callContext.whileWaiting(run) : run();
  }

  /**
   * Asks for approval when `security.approvals.require` lists the tool, its risk, or the given reason. Counted per
   * turn: what the owner denied in this turn (each of `classes`, by default the exact action) is refused without
   * asking again.
   */
  private async requireApproval(
    tool: Tool,
    action: string,
    reason: string,
    callContext: ToolCallContext,
    audit: AuditEntry,
    classes: readonly string[] = [`${reason} ${tool.name} ${action}`],
  ): Promise<ApprovalDecision> {
    const { require } = this.options.config.security.approvals;
    const needed = require.includes(reason) || (reason.startsWith("risk:") && require.includes(tool.name));
    if (!needed) return "approved";
    const turn = callContext.turnApprovals;
    if (turn && classes.some((actionClass) => turn.isDenied(actionClass))) {
      audit.verdict = "deny";
      throw new GuardRefusal(
        "approval.denied_earlier",
        `The owner denied this earlier in this turn (${reason}), so '${tool.name}' was not asked about again and nothing was done. Don't retry it in pieces or another way; say in your answer what you wanted to do.`,
      );
    }
    const approver = callContext.approver;
    if (!approver || (reason === "guard:warn" && !callContext.canAsk)) {
      // A job, a subagent or a guest's turn: there is no owner here to ask, so what needs asking is refused.
      audit.verdict = "deny";
      throw new GuardRefusal(
        "approval.no_one_to_ask",
        `'${tool.name}' needs an owner's approval (${reason}, security.approvals.require) and there is no one to ask in this ${callContext.origin === "user" ? "guest's turn" : `${callContext.origin} turn`}; nothing was done.`,
      );
    }
    const decision = await this.askOwner(tool, action, reason, approver, callContext);
    audit.verdict =
      decision === "approved" ? "approved" : decision === "timeout" ? "timeout" : "denied-by-user";
    if (decision !== "approved") {
      audit.outcome = "denied";
      for (const actionClass of classes) turn?.deny(actionClass);
    }
    return decision;
  }

  /**
   * Puts one approval to the owner — every approval a call needs (the rule of two's, `security.approvals.require`,
   * a guard's Warn) goes through here, journaled in a journaled turn (DESIGN.md → Durable turns): a decision made
   * before a cut-off stands, a pending request is asked again under its id. A turn waiting for a person holds no
   * maxConcurrentTurns slot.
   */
  private async askOwner(
    tool: Tool,
    action: string,
    reason: string,
    approver: NonNullable<ToolCallContext["approver"]>,
    callContext: ToolCallContext,
  ): Promise<ApprovalDecision> {
    const steps = callContext.approvalSteps;
    const earlier = steps?.next();
    let askedId = earlier?.approvalId;
    const ask = () =>
      this.options.approvals.request({
        sessionKey: callContext.sessionKey,
        target: approver.target,
        approver: approver.identity,
        tool: tool.name,
        action,
        reason,
        timeoutMs: this.options.config.security.approvals.timeoutSecs * 1000,
        signal: callContext.signal,
        ...(earlier ? { id: earlier.approvalId } : {}),
        ...(steps && !earlier
          ? {
              onAsked: (id: string) => {
                askedId = id;
                steps.asked(id);
              },
            }
          : {}),
      });
    const decision =
      earlier?.decision ?? (callContext.whileWaiting ? await callContext.whileWaiting(ask) : await ask());
    // A request cut off by a shutdown keeps no decision: the resumed turn asks again.
    if (steps && askedId && !earlier?.decision && !callContext.signal.aborted)
      steps.decided(askedId, decision);
    return decision;
  }
}

/** A call a rule refused — a guard, the tool set, a budget, or a tool that isn't there — rather than one that failed. */
function isRefusal(error: unknown): boolean {
  return (
    error instanceof GuardRefusal ||
    (error instanceof ToolError && (error.code === "tool.not_available" || error.code.startsWith("budget.")))
  );
}

function noOneToAsk(origin: string): ToolError {
  return new GuardRefusal(
    "question.no_one_to_ask",
    `There is no one to ask in this ${origin} turn (a job or a subagent runs unattended). Decide without asking, or report the open question in your answer.`,
  );
}

function approvalError(tool: string, decision: ApprovalDecision): ToolError {
  return decision === "timeout"
    ? new ToolError("approval.timeout", `The owner did not approve '${tool}' in time; the call was not run.`)
    : new ToolError(
        "approval.denied",
        `The owner denied '${tool}'; the call was not run. Ask before retrying.`,
      );
}

/** Every tool call a tool runs on behalf of another: re-exported for features that need it. */
export type { ToolContext };

/**
 * The text without a Markdown fence around it (```json … ```), trimmed. In code: a `\s*```$` regex backtracks
 * over every run of spaces that isn't at the end.
 */
function withoutFence(text: string): string {
  let inner = text.trim();
  if (inner.startsWith("```")) inner = inner.slice(inner.startsWith("```json") ? 7 : 3);
  if (inner.endsWith("```")) inner = inner.slice(0, -3);
  return inner.trim();
}
