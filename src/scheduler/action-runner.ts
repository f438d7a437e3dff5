import type { Logger } from "pino";
import type { AgentRunner } from "../core/agent-runner.js";
import type { SessionNote } from "../core/chat-turns.js";
import type { AuthorityPort, SenderIdentity } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import type { Approver, ToolRuntime } from "../core/tool-runtime.js";
import type { ReplyTarget } from "../core/types.js";
import { errorMessage } from "../lib/errors.js";
import { markAlsoSentVia } from "../notify/delivery-failover.js";
import type { Notifier } from "../notify/pushover.js";
import type { Store } from "../store/index.js";
import type { JobCreator } from "./job.js";
import { shellOutputText } from "./report.js";

/**
 * The one runner of background actions (DESIGN.md → Layout → Composition, STYLE.md → "One of a kind stays
 * one"): cron jobs, triggers and `hardware.watch` hand it what to do and whose authority it carries; it owns
 * the refusal rule, the approver, the acting target, shell/prompt execution and immediate delivery. A new
 * event source describes itself as an `ActionSource` and calls `run` + `deliver` — nothing here changes.
 */

type Chat = Pick<ReplyTarget, "channel" | "chatId" | "threadId">;

/** Who scheduled the action: names its sessions, call ids, pseudo-target, log lines and refusal texts. */
export interface ActionSource {
  /** `cron`, `trigger`, … — the prefix of session keys (`cron:7`), call ids and rule codes (`cron.guest_not_allowed`). */
  kind: string;
  /** The job id or trigger name. */
  id: string;
  /** How a sentence names it: `job #7`, `trigger "door"`. */
  label: string;
  /** The tool-call origin of its runs. */
  origin: "schedule" | "event";
}

/** Whose authority an action carries and where it reports (DESIGN.md → Security → "Jobs carry their creator's authority"). */
export interface ActionOwner {
  creator: JobCreator;
  /** Config and CLI actions are the owners'; a chat one has no report-chat standing for approvals. */
  source: "chat" | "config" | "cli";
  /** The chat it was made in: where its approval requests go. */
  createdFrom?: ReplyTarget | undefined;
  /** Its report chat, if any. */
  chat?: ReplyTarget | undefined;
}

/** A tool the action reaches through, and what it does with it (a sentence's verb phrase). */
export interface NeededTool {
  tool: string;
  /** e.g. "runs a command", "reads a GPIO pin". */
  does: string;
}

/** What to run: a message is its text; shell goes through the `shell` tool; prompt is an isolated agent turn. */
export type ActionWork =
  | { kind: "message"; text: string }
  | { kind: "shell"; command: string; agent?: string | undefined }
  | {
      kind: "prompt";
      prompt: string;
      agent?: string | undefined;
      toolSet?: string | string[] | undefined;
      /** Tools the run may still use after untrusted content (the job's `allowAfterUntrusted`). */
      allowAfterUntrusted?: readonly string[] | undefined;
      /** The untrusted content the prompt carries (a trigger's payload), named as a source. */
      untrusted?: string | undefined;
    };

export interface ActionRequest {
  from: ActionSource;
  owner: ActionOwner;
  work: ActionWork;
  /** Run number (a job's run id, a trigger's nth firing): names the call and the prompt's session. */
  run: number;
  signal: AbortSignal;
  /** Tools the action reaches besides its work's own (a trigger's source: `gpio`, `serial`, `mqtt_publish`). */
  reaches?: readonly NeededTool[];
}

/** Why an owner may not have an action run (or made): a rule ID's suffix and what is missing. */
export type AuthorityRefusal =
  | { rule: "guest_not_allowed" }
  | { rule: "tool_not_allowed"; tool: string; does: string; tools: string };

/** Where a report goes right away (triggers, watches). */
export interface ImmediateDelivery {
  chat?: ReplyTarget | undefined;
  /**
   * Whether the chat is judged again by the access rules (default true). Only `hardware.watch` says false: its
   * `notify` chat comes from the owner's file and was never held to the `message` rule (kept as it was).
   */
  recheck?: boolean;
  pushover?: boolean | undefined;
  ntfy?: boolean | undefined;
  /**
   * With `chat`: the text goes into that chat's session as an event note carrying this request, shown there, and
   * the follow-up turn (with `sender`'s authority) answers in the chat (`hardware.watch`'s `prompt`).
   */
  followUp?: { request: string; sender: SenderIdentity } | undefined;
}

export interface ActionRunnerDeps {
  tools: Pick<ToolRuntime, "execute" | "resolveToolSet">;
  agent: AgentRunner;
  /** Read at each check: an allowlist change between creation and run takes effect. */
  authority: () => AuthorityPort;
  messenger?: Messenger;
  notifier?: Notifier;
  logger?: Logger;
  /** Longest message a channel takes. */
  maxMessageLength?: (channel: string) => number;
  /** Puts a note into a chat's session (a follow-up turn there): needed by `followUp` deliveries. */
  note?: (note: SessionNote) => void;
  /** Where a delivery's chat copy records the phone paths it also went out on (the delivery failover skips them). */
  kv?: Store["kv"];
}

/** What a command action reaches. */
export const SHELL_TOOL: NeededTool = { tool: "shell", does: "runs a command" };

/**
 * The one authority rule for background actions: a guest's action never runs; an action whose work or source
 * reaches a tool needs that tool among the creating turn's (recorded ones; none recorded = the owner's own).
 */
export function authorityRefusal(
  creator: JobCreator,
  needed: readonly NeededTool[],
): AuthorityRefusal | null {
  const { identity, toolNames } = creator;
  if (identity.role === "guest") return { rule: "guest_not_allowed" };
  if (!toolNames) return null;
  const missing = needed.find(({ tool }) => !toolNames.includes(tool));
  if (!missing) return null;
  return { rule: "tool_not_allowed", ...missing, tools: toolNames.join(", ") || "none" };
}

/** The run-time refusal text, null when the action may run. */
export function runRefusalText(
  request: Pick<ActionRequest, "from" | "owner" | "work" | "reaches">,
): string | null {
  const { from, owner } = request;
  const reaches = request.reaches ?? [];
  const refusal = authorityRefusal(
    owner.creator,
    request.work.kind === "shell" ? [SHELL_TOOL, ...reaches] : reaches,
  );
  if (!refusal) return null;
  const { identity } = owner.creator;
  if (refusal.rule === "guest_not_allowed")
    return `Refused (${from.kind}.guest_not_allowed): ${from.label} was made by a guest (${identity.userId} on ${identity.channel}); it does not run.`;
  return `Refused (${from.kind}.tool_not_allowed): ${from.label} ${refusal.does}, and the turn that made it had no ${refusal.tool} tool.`;
}

/**
 * Who answers an action's approval requests, and where: its creator, in the chat it was made from. A config or
 * CLI action has no such chat; its report chat serves, if it has one. Never a chat Magpie may not post to (then
 * there is no one to ask and what needs asking is refused).
 */
export function actionApprover(owner: ActionOwner, authority: AuthorityPort): Approver | undefined {
  const chat = owner.createdFrom ?? (owner.source === "chat" ? undefined : owner.chat);
  if (!chat || !authority.mayDeliver(null, chat)) return undefined;
  const { channel, chatId, threadId } = chat;
  return { target: { channel, chatId, ...(threadId ? { threadId } : {}) }, identity: owner.creator.identity };
}

/** Where an action acts "from": its report chat, or a pseudo-target naming it (`cron:7`, `trigger:door`). */
export function actionTarget(from: ActionSource, owner: ActionOwner): ReplyTarget {
  return owner.chat ?? { channel: from.kind, chatId: from.id };
}

/**
 * The tools a prompt action's turn gets: its own tool set (default `default`), narrowed to the tools the
 * creating turn had when those are recorded.
 */
export function narrowedToolSet(
  own: string | string[] | undefined,
  creator: JobCreator,
  resolveToolSet: (toolSet: string | string[]) => string[],
): string | string[] {
  const set = own ?? "default";
  const creatorTools = creator.toolNames;
  if (!creatorTools) return set;
  const allowed = new Set(creatorTools);
  return resolveToolSet(set).filter((name) => allowed.has(name));
}

/**
 * Checked again when a report goes out, so an allowlist change between creation and run takes effect. The
 * creating chat has no standing of its own here: it must still be an owner's chat or an allowed group.
 */
export function mayDeliverNow(authority: AuthorityPort, chat: Chat): boolean {
  return authority.mayDeliver(null, chat);
}

/** The fix named in every refused delivery target. */
export function deliverRuleText(chat: Pick<Chat, "channel">): string {
  return `only the chat a job is made in, owners' chats and the channel's configured groups (channels.${chat.channel}.groups) or owners (channels.${chat.channel}.allowFrom)`;
}

/** What a run produced; `refused` when the owner's authority no longer lets it run (the text says why). */
export interface ActionResult {
  ok: boolean;
  text: string;
  refused?: true;
}

export interface ActionRunner {
  /** Runs the work with its owner's authority; never throws for the work's failure (ok: false). */
  run(request: ActionRequest): Promise<ActionResult>;
  /**
   * Sends a report now: to the chat (checked again against the access rules; a refused chat throws) and to the
   * phone providers asked for (a failure is logged and thrown).
   */
  deliver(from: ActionSource, to: ImmediateDelivery, text: string): Promise<void>;
}

export function createActionRunner(deps: ActionRunnerDeps): ActionRunner {
  return {
    async run(request) {
      const { from, owner, work, run, signal } = request;
      if (work.kind === "message") return { ok: true, text: work.text };
      const refusal = runRefusalText(request);
      if (refusal) return { ok: false, text: refusal, refused: true };
      const sender = owner.creator.identity;
      const approver = actionApprover(owner, deps.authority());
      const target = actionTarget(from, owner);
      if (work.kind === "shell") {
        const result = await deps.tools.execute(
          {
            id: `${from.kind}-${from.id}-${run}`,
            type: "function",
            function: { name: "shell", arguments: JSON.stringify({ command: work.command }) },
          },
          ["shell"],
          {
            sessionKey: `${from.kind}:${from.id}`,
            agent: work.agent ?? owner.creator.agent ?? "main",
            target,
            userId: sender.userId,
            signal,
            depth: 0,
            origin: from.origin,
            sender,
            // Nobody is there to ask: approval requests go to the approver, else what needs one is refused.
            canAsk: false,
            ...(approver ? { approver } : {}),
          },
        );
        const { ok, text } = shellOutputText(result);
        return { ok, text };
      }
      const toolSet = narrowedToolSet(work.toolSet, owner.creator, (set) => deps.tools.resolveToolSet(set));
      const answer = await deps.agent.run({
        agent: work.agent ?? owner.creator.agent,
        prompt: work.prompt,
        // A session per run: a background turn never leaks into a chat's history or into the next run.
        sessionKey: `${from.kind}:${from.id}:${run}`,
        target,
        toolSet,
        // The creator's tools, narrowed by the action's own set, bound the run and anything it delegates to.
        ...(owner.creator.toolNames
          ? { toolLimit: Array.isArray(toolSet) ? toolSet : owner.creator.toolNames }
          : {}),
        signal,
        origin: from.origin,
        sender,
        ...(approver ? { approver } : {}),
        // The rule of two: a payload in the prompt is untrusted from the start; the job may allow tools after it.
        untrusted: {
          sources: work.untrusted ? [{ kind: "trigger", label: work.untrusted }] : [],
          ...(work.allowAfterUntrusted ? { allowAfterUntrusted: work.allowAfterUntrusted } : {}),
        },
      });
      return { ok: answer.ok, text: answer.text };
    },

    async deliver(from, to, text) {
      const logger = deps.logger;
      const chat = to.chat;
      let chatCopy: number | undefined;
      if (chat) {
        if (to.recheck !== false && !mayDeliverNow(deps.authority(), chat)) {
          // The allowlist changed since the action was made: nothing is ever posted there.
          logger?.warn(
            { [from.kind]: from.id, channel: chat.channel, chatId: chat.chatId },
            `${from.kind}-delivery-refused`,
          );
          throw new Error(`${chat.channel}:${chat.chatId} is not a chat Magpie may post to`);
        }
        const followUp = to.followUp;
        if (followUp) {
          if (!deps.note) throw new Error("no session notes to deliver with");
          deps.note({
            target: chat,
            sender: followUp.sender,
            origin: "event",
            label: `${from.kind} ${from.id}`,
            text: `${text}\n\n${followUp.request}`,
            show: text,
          });
        } else {
          const max = deps.maxMessageLength?.(chat.channel) ?? 4_000;
          const body = text.length > max ? `${text.slice(0, max - 1)}…` : text;
          if (!deps.messenger) throw new Error("no messenger to deliver with");
          chatCopy = deps.messenger.send(chat, { text: body }, "notice");
        }
      }
      const phones = (["pushover", "ntfy"] as const).filter((provider) => to[provider]);
      if (phones.length > 0 && deps.notifier) {
        // Known before the chat copy can fail over: the same text goes out on these paths.
        for (const provider of phones)
          if (chatCopy !== undefined && deps.kv) markAlsoSentVia(deps.kv, chatCopy, provider);
        try {
          await deps.notifier.send({ title: `Magpie: ${from.id}`, message: text.slice(0, 1_000) }, phones);
        } catch (error) {
          for (const provider of phones)
            if (chatCopy !== undefined && deps.kv) markAlsoSentVia(deps.kv, chatCopy, provider, false);
          logger?.warn({ [from.kind]: from.id, error: errorMessage(error) }, `${from.kind}-phone-failed`);
          throw error;
        }
      }
    },
  };
}
