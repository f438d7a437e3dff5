import type { Logger } from "pino";
import type { MagpieConfig } from "../config/schema.js";
import type { ApprovalDecision, QuestionAnswer, QuestionRequest } from "../core/approvals.js";
import type { DelegationPort } from "../core/delegation.js";
import type { SubagentsPort } from "../core/subagents.js";
import type { ToolCallContext } from "../core/tool-runtime.js";
import type { Redactor } from "../security/redact.js";
import type { Store } from "../store/index.js";

/**
 * Services tools reach through their context. Features add their own optional members here
 * (memory, scheduler, notifier, messenger …) and wire them in `src/app.ts`.
 */
export interface ToolServices {
  store: Store;
  redactor: Redactor;
  /** `delegate`: runs a turn of another agent inside the caller's. */
  delegation?: DelegationPort;
  /** `spawn`: background subagents. */
  subagents?: SubagentsPort;
  /** Extra named services registered by features; typed access goes through their own modules. */
  [name: string]: unknown;
}

/** Per-session scratch state that lives as long as the process (e.g. files read, for read-before-write). */
export class SessionScratch {
  private readonly bySession = new Map<string, Map<string, unknown>>();

  get<T>(sessionKey: string, key: string): T | undefined {
    return this.bySession.get(sessionKey)?.get(key) as T | undefined;
  }

  set(sessionKey: string, key: string, value: unknown): void {
    let entries = this.bySession.get(sessionKey);
    if (!entries) {
      entries = new Map();
      this.bySession.set(sessionKey, entries);
    }
    entries.set(key, value);
  }

  clear(sessionKey: string): void {
    this.bySession.delete(sessionKey);
  }
}

/** Everything a tool's `execute` receives besides its input. */
export interface ToolContext extends ToolCallContext {
  config: MagpieConfig;
  logger: Logger;
  services: ToolServices;
  scratch: SessionScratch;
  /** The tools this turn may use (its resolved tool set): what a job made in it may carry at most. */
  allowedTools: readonly string[];
  /** Adds a warning to the result and the audit log (file-guard Warn verdicts). */
  warn(message: string): void;
  /**
   * Asks the owner to approve an action when `security.approvals` requires it for `reason`
   * (`guard:warn`, a tool name or `risk:<level>`); resolves "approved" without asking when not required.
   */
  requireApproval(action: string, reason: string): Promise<ApprovalDecision>;
  /**
   * Asks the person of this turn a question in its chat and waits (without holding a turn slot) for the
   * answer; refused where no one can be asked (a job, a subagent).
   */
  ask(
    question: Omit<QuestionRequest, "sessionKey" | "target" | "askedOf" | "signal">,
  ): Promise<QuestionAnswer>;
}
