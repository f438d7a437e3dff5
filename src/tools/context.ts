import type { Logger } from "pino";
import type { BrowserService } from "../browser/browser-service.js";
import type { MagpieConfig } from "../config/schema.js";
import type { ApprovalDecision, QuestionAnswer, QuestionRequest } from "../core/approvals.js";
import type { DelegationPort } from "../core/delegation.js";
import type { AuthorityPort } from "../core/identity.js";
import type { MessagingService } from "../core/messenger.js";
import type { SubagentsPort } from "../core/subagents.js";
import type { ToolCallContext } from "../core/tool-runtime.js";
import type { ChannelAdapter } from "../core/types.js";
import type { HardwareService } from "../hardware/hardware-service.js";
import type { Redactor } from "../log/redact.js";
import type { MemoryService } from "../memory/memory-service.js";
import type { Notifier } from "../notify/pushover.js";
import type { Scheduler } from "../scheduler/scheduler.js";
import type { ChatApprovalGate } from "../security/approval-gate.js";
import type { PairingStore } from "../security/pairing.js";
import type { ProvenanceStore } from "../security/provenance-store.js";
import type { QuestionGate } from "../security/question-gate.js";
import type { SafeHttpClient } from "../security/safe-http.js";
import type { UntrustedTestHooks } from "../security/untrusted.js";
import type { SkillCatalog } from "../skills/skill-catalog.js";
import type { Store } from "../store/index.js";
import type { TriggerService } from "../triggers/trigger-service.js";
import type { SpillStore } from "./spill.js";
import type { WebSearchClient } from "./web/web-search-client.js";

/**
 * Services tools reach through their context. The app builds the required ones; features set their optional
 * members in `setup` (src/app/*-feature.ts), and a tool without its service says so.
 */
export interface ToolServices {
  store: Store;
  redactor: Redactor;
  /** `delegate`: runs a turn of another agent inside the caller's. */
  delegation?: DelegationPort;
  /** `spawn`: background subagents. */
  subagents?: SubagentsPort;
  /** Large tool outputs saved for `spill_read`. */
  spill?: SpillStore;
  /** Who is an owner and where a message may go (access feature); `message` posts only where it allows. */
  authority?: AuthorityPort;
  /** Connected channel adapters by name (access feature), for `attachment_save`. */
  channels?: ReadonlyMap<string, ChannelAdapter>;
  /** Pairing codes (access feature). */
  pairing?: PairingStore;
  /** Approvals in chat (security feature). */
  approvals?: ChatApprovalGate;
  /** Questions in chat (security feature). */
  questions?: QuestionGate;
  /** Long-term memory (memory feature), for the memory tools. */
  memory?: MemoryService;
  /** Cron jobs (scheduler feature), for the cron tools and `schedule`. */
  scheduler?: Scheduler;
  /** Phone notifications (scheduler feature); `pushover` builds one from config without it. */
  notifier?: Notifier;
  /** Outbox and channel names (scheduler feature), for `message`. */
  messaging?: MessagingService;
  /** Skills (mcp feature), for `invoke_skill`. */
  skills?: SkillCatalog;
  /** Boards, pins and ports (hardware feature), for the hardware tools. */
  hardware?: HardwareService;
  /** Event triggers and the MQTT connection (triggers feature), for the trigger tools and `mqtt_publish`. */
  triggers?: TriggerService;
  /** The headless Chromium behind `browser` (browser feature); started on first use. */
  browser?: BrowserService;
  /** Tests: the SSRF-safe client web tools use instead of the one built from config. */
  safeHttp?: SafeHttpClient;
  /** Tests: the search client `web_search` uses instead of its own. */
  webSearch?: WebSearchClient;
  /** Tests: the home directory the path guard and sandbox judge paths in, instead of the real one. */
  homeDir?: string;
  /** Where written files and stored memories came from (the rule of two); made from `store` when absent. */
  provenance?: ProvenanceStore;
  /** Test-only hooks of the rule of two, honoured under vitest only (src/security/untrusted.ts → testHooks). */
  untrustedTest?: UntrustedTestHooks;
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
   * `classes` name what a denial covers for the rest of the turn (default: this exact action): a call of a class
   * the owner denied earlier in the turn is refused without asking again.
   */
  requireApproval(
    action: string,
    reason: string,
    options?: { classes?: readonly string[] },
  ): Promise<ApprovalDecision>;
  /**
   * Asks the person of this turn a question in its chat and waits (without holding a turn slot) for the
   * answer; refused where no one can be asked (a job, a subagent).
   */
  ask(
    question: Omit<QuestionRequest, "sessionKey" | "target" | "askedOf" | "signal">,
  ): Promise<QuestionAnswer>;
}
