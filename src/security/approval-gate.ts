import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { ApprovalDecision, ApprovalGate, ApprovalRequest } from "../core/approvals.js";
import { type Clock, systemClock } from "../core/clock.js";
import type { AuthorityPort } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import type { ButtonPress } from "../core/types.js";
import { revealInvisible } from "../lib/reveal-invisible.js";
import type { Redactor } from "../log/redact.js";
import type { Store } from "../store/index.js";
import { ApprovalRepository } from "./approval-store.js";
import { approvalPromptText } from "./approval-text.js";

export interface ChatApprovalGateOptions {
  store: Store;
  messenger: Messenger;
  logger: Logger;
  redactor: Redactor;
  /** Who is an owner: only an owner's press or command decides. */
  authority: () => AuthorityPort;
  clock?: Clock;
}

/** Who decided, and where: a decision only counts from an owner, in the chat the request was sent to. */
export interface Decider {
  channel: string;
  chatId: string;
  userId: string;
  userName?: string;
}

export type DecideResult =
  | { ok: true; id: string; decision: "approved" | "denied"; tool: string }
  | { ok: false; reason: string };

interface Waiting {
  resolve(decision: ApprovalDecision): void;
  timer: NodeJS.Timeout;
  cleanup(): void;
}

const BUTTON_ID = /^(approve|deny):([a-z0-9]+)$/;

/**
 * Pauses a turn until the owner approves or denies the exact action: sends it with Approve/Deny buttons,
 * accepts a button press or `/approve <id>` / `/deny <id>` from the same chat, and treats the timeout as a
 * denial. Every request and decision is stored (table `approvals`) and audited.
 */
export class ChatApprovalGate implements ApprovalGate {
  readonly repository: ApprovalRepository;
  private readonly waiting = new Map<string, Waiting>();
  private readonly clock: Clock;

  constructor(private readonly options: ChatApprovalGateOptions) {
    this.repository = new ApprovalRepository(options.store.db);
    this.clock = options.clock ?? systemClock;
    const orphans = this.repository.expireOrphans(this.clock.now());
    if (orphans > 0) options.logger.info({ orphans }, "approvals-expired-after-restart");
  }

  async request(request: ApprovalRequest): Promise<ApprovalDecision> {
    if (request.signal?.aborted) return "denied";
    const now = this.clock.now();
    // Redacted, and with invisible and bidirectional characters shown, so the owner reads what will run.
    const action = revealInvisible(this.options.redactor.redact(request.action));
    const earlier = request.id ? this.repository.get(request.id) : null;
    const id = earlier?.id ?? this.newId();
    if (earlier) {
      // A resumed turn asks again under the same id: decided once — a person's decision stands.
      if (!this.repository.reopen(id, now, now + request.timeoutMs))
        return earlier.status === "approved" ? "approved" : "denied";
    } else {
      this.repository.insert({
        id,
        sessionKey: request.sessionKey,
        channel: request.target.channel,
        chatId: request.target.chatId,
        tool: request.tool,
        action,
        reason: request.reason,
        requestedAt: now,
        expiresAt: now + request.timeoutMs,
      });
    }
    request.onAsked?.(id);
    const text = approvalPromptText({
      id,
      reason: request.reason,
      tool: request.tool,
      action,
      timeoutSecs: Math.round(request.timeoutMs / 1000),
    });
    const decision = new Promise<ApprovalDecision>((resolve) => {
      const onAbort = () => this.finish(id, "cancelled", null);
      request.signal?.addEventListener("abort", onAbort, { once: true });
      const timer = setTimeout(() => this.finish(id, "timeout", null), request.timeoutMs);
      this.waiting.set(id, {
        resolve,
        timer,
        cleanup: () => request.signal?.removeEventListener("abort", onAbort),
      });
    });
    try {
      this.options.messenger.send(
        request.target,
        {
          text,
          buttons: [
            [
              { id: `approve:${id}`, label: "Approve", style: "primary" },
              { id: `deny:${id}`, label: "Deny", style: "danger" },
            ],
          ],
        },
        "approval",
      );
    } catch (error) {
      this.options.logger.error({ err: error, approval: id }, "approval-send-failed");
      this.finish(id, "denied", "send-failed");
    }
    return decision;
  }

  /** Applies an owner's decision from a button or a slash command. */
  decide(id: string, decision: "approved" | "denied", decider: Decider): DecideResult {
    const record = this.repository.get(id);
    if (!record) return { ok: false, reason: `There is no approval request ${id}.` };
    if (this.options.authority().roleOf(decider.channel, decider.userId) !== "owner") {
      this.auditRefused(id, record.sessionKey, decider);
      return { ok: false, reason: `Only an owner can decide approval ${id}.` };
    }
    if (record.channel !== decider.channel || record.chatId !== decider.chatId) {
      return { ok: false, reason: `Approval ${id} belongs to another chat; decide it there.` };
    }
    if (record.status !== "pending" || !this.waiting.has(id)) {
      return {
        ok: false,
        reason: `Approval ${id} is already ${record.status === "pending" ? "closed" : record.status}.`,
      };
    }
    this.finish(id, decision, decider.userName ? `${decider.userId} (${decider.userName})` : decider.userId);
    return { ok: true, id, decision, tool: record.tool };
  }

  /** A decision from the signed-in dashboard user, an owner of every chat (DESIGN.md "Dashboard"). */
  decideFromDashboard(id: string, decision: "approved" | "denied"): DecideResult {
    const record = this.repository.get(id);
    if (!record) return { ok: false, reason: `There is no approval request ${id}.` };
    if (record.status !== "pending" || !this.waiting.has(id)) {
      return {
        ok: false,
        reason: `Approval ${id} is already ${record.status === "pending" ? "closed" : record.status}.`,
      };
    }
    this.finish(id, decision, "dashboard");
    return { ok: true, id, decision, tool: record.tool };
  }

  /** Button handler for `approve:<id>` / `deny:<id>`; false for buttons that aren't approvals. */
  handleButton(press: ButtonPress): boolean {
    const match = BUTTON_ID.exec(press.buttonId);
    if (!match) return false;
    const decision = match[1] === "approve" ? "approved" : "denied";
    const result = this.decide(match[2]!, decision, press);
    const reply = result.ok
      ? `${result.decision === "approved" ? "Approved" : "Denied"}: ${result.tool} (${result.id}) by ${press.userName || press.userId}.`
      : result.reason;
    this.options.messenger.send(
      { channel: press.channel, chatId: press.chatId, threadId: press.threadId },
      { text: reply, format: "plain" },
      "approval",
    );
    return true;
  }

  /** A guest's press or command on an approval: refused, and recorded. */
  private auditRefused(id: string, sessionKey: string | null, decider: Decider): void {
    this.options.logger.warn(
      { approval: id, channel: decider.channel, userId: decider.userId },
      "approval-refused-not-owner",
    );
    try {
      this.options.store.audit.record({
        sessionKey: sessionKey ?? undefined,
        sender: `${decider.channel}:${decider.userId} (guest)`,
        tool: "approval",
        arguments: JSON.stringify({ id, attemptedBy: `${decider.channel}:${decider.userId}` }),
        verdict: "deny",
        outcome: "denied",
        errorCode: "approval.not_owner",
        durationMs: 0,
        at: this.clock.now(),
      });
    } catch (error) {
      this.options.logger.error({ err: error, approval: id }, "approval-audit-failed");
    }
  }

  /** Requests still waiting for an answer in this process. */
  get pendingCount(): number {
    return this.waiting.size;
  }

  private finish(
    id: string,
    status: "approved" | "denied" | "timeout" | "cancelled",
    decidedBy: string | null,
  ): void {
    const waiting = this.waiting.get(id);
    if (!waiting) return;
    this.waiting.delete(id);
    clearTimeout(waiting.timer);
    waiting.cleanup();
    const now = this.clock.now();
    this.repository.settle(id, status, decidedBy, now);
    const record = this.repository.get(id);
    const decision: ApprovalDecision =
      status === "approved" ? "approved" : status === "timeout" ? "timeout" : "denied";
    try {
      this.options.store.audit.record({
        sessionKey: record?.sessionKey,
        tool: "approval",
        arguments: JSON.stringify({
          id,
          tool: record?.tool,
          action: record?.action,
          reason: record?.reason,
          decidedBy,
        }),
        verdict: decision === "approved" ? "approved" : decision === "timeout" ? "timeout" : "denied-by-user",
        outcome: decision === "approved" ? "ok" : "denied",
        durationMs: record ? now - record.requestedAt : 0,
        resultExcerpt: status,
      });
    } catch (error) {
      this.options.logger.error({ err: error, approval: id }, "approval-audit-failed");
    }
    this.options.logger.info({ approval: id, tool: record?.tool, status, decidedBy }, "approval-decided");
    waiting.resolve(decision);
  }

  private newId(): string {
    for (;;) {
      const id = randomBytes(4).toString("hex");
      if (!this.waiting.has(id) && !this.repository.get(id)) return id;
    }
  }
}
