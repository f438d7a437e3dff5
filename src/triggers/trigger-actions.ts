import type { Logger } from "pino";
import type { AgentRunner } from "../core/agent-runner.js";
import type { AuthorityPort } from "../core/identity.js";
import type { Messenger } from "../core/messenger.js";
import type { Approver, ToolRuntime } from "../core/tool-runtime.js";
import type { ReplyTarget } from "../core/types.js";
import { errorMessage } from "../lib/errors.js";
import type { Notifier } from "../notify/pushover.js";
import { mayDeliverNow, promptJobToolSet } from "../scheduler/job-authority.js";
import { shellOutputText } from "../scheduler/report.js";
import { renderTemplate } from "./template.js";
import type { TriggerDefinition, TriggerEvent } from "./trigger.js";
import { authorityRefusal } from "./trigger-authority.js";
import type { ActionRunner } from "./trigger-engine.js";
import { quoteEvent } from "./untrusted-event.js";

export interface TriggerActionDeps {
  messenger: Messenger;
  notifier: Notifier;
  tools: Pick<ToolRuntime, "execute" | "resolveToolSet">;
  agent: AgentRunner;
  authority: () => AuthorityPort;
  logger: Logger;
  /** Longest message a channel takes. */
  maxMessageLength(channel: string): number;
  /** Longest a command or prompt run may take. */
  runTimeoutMs: number;
}

/** Where a trigger acts "from": its delivery chat, or a pseudo-target naming the trigger. */
export function triggerTarget(trigger: TriggerDefinition): ReplyTarget {
  return trigger.deliver.chat ?? { channel: "trigger", chatId: trigger.name };
}

/** Who answers a trigger's approval requests: its creator where it was made, else its report chat. */
function triggerApprover(trigger: TriggerDefinition, authority: AuthorityPort): Approver | undefined {
  const chat = trigger.createdFrom ?? (trigger.source === "chat" ? undefined : trigger.deliver.chat);
  if (!chat || !authority.mayDeliver(null, chat)) return undefined;
  const { channel, chatId, threadId } = chat;
  return {
    target: { channel, chatId, ...(threadId ? { threadId } : {}) },
    identity: trigger.creator.identity,
  };
}

/** Why a trigger may not act at all any more (null when it may): the jobs' rule. */
export function triggerRefusal(trigger: TriggerDefinition): string | null {
  const refusal = authorityRefusal(trigger);
  if (!refusal) return null;
  return `Refused (${refusal.code}): trigger "${trigger.name}" does not run — ${refusal.message}.`;
}

/**
 * The three actions, each carrying the trigger's creator's authority like a job run: `message` is the
 * template filled from the event (no LLM); `command` goes through the registered `shell` tool (sandbox, guards,
 * audit); `prompt` is an isolated agent turn of origin `event` whose request quotes the event as untrusted
 * data, with the trigger's tool set narrowed to its creator's. What each produces goes to `deliver`, whose chat
 * is checked again at delivery.
 */
export function createTriggerActions(deps: TriggerActionDeps): ActionRunner {
  let runs = 0;
  return async (trigger, event) => {
    const text = await produce(trigger, event, ++runs);
    await deliver(trigger, text);
  };

  async function produce(trigger: TriggerDefinition, event: TriggerEvent, run: number): Promise<string> {
    const action = trigger.do;
    if ("message" in action) return renderTemplate(action.message, event);
    const refusal = triggerRefusal(trigger);
    if (refusal) return refusal;
    const sender = trigger.creator.identity;
    const approver = triggerApprover(trigger, deps.authority());
    const signal = AbortSignal.timeout(deps.runTimeoutMs);
    if ("command" in action) {
      const result = await deps.tools.execute(
        {
          id: `trigger-${trigger.name}-${run}`,
          type: "function",
          function: { name: "shell", arguments: JSON.stringify({ command: action.command }) },
        },
        ["shell"],
        {
          sessionKey: `trigger:${trigger.name}`,
          agent: trigger.creator.agent ?? "main",
          target: triggerTarget(trigger),
          userId: sender.userId,
          signal,
          depth: 0,
          origin: "event",
          sender,
          canAsk: false,
          ...(approver ? { approver } : {}),
        },
      );
      const { ok, text } = shellOutputText(result);
      return `${ok ? "✅" : "❌"} ${trigger.name}\n${text || "(no output)"}`;
    }
    const toolSet = promptJobToolSet({ toolSet: action.toolSet, creator: trigger.creator }, (set) =>
      deps.tools.resolveToolSet(set),
    );
    const answer = await deps.agent.run({
      agent: action.agent ?? trigger.creator.agent,
      prompt: `${action.prompt}\n\n${quoteEvent(trigger.name, event)}`,
      // A session per run: one event's turn never leaks into a chat's history or into the next event's.
      sessionKey: `trigger:${trigger.name}:${run}`,
      target: triggerTarget(trigger),
      toolSet,
      // The creator's tools, narrowed by the action's own set, bound the turn and anything it delegates to.
      ...(trigger.creator.toolNames
        ? { toolLimit: Array.isArray(toolSet) ? toolSet : trigger.creator.toolNames }
        : {}),
      signal,
      origin: "event",
      sender,
      ...(approver ? { approver } : {}),
    });
    return answer.text;
  }

  async function deliver(trigger: TriggerDefinition, text: string): Promise<void> {
    const chat = trigger.deliver.chat;
    if (chat) {
      if (!mayDeliverNow(deps.authority(), chat)) {
        // The allowlist changed since the trigger was made: nothing is ever posted there.
        deps.logger.warn(
          { trigger: trigger.name, channel: chat.channel, chatId: chat.chatId },
          "trigger-delivery-refused",
        );
        throw new Error(`${chat.channel}:${chat.chatId} is not a chat Magpie may post to`);
      }
      const max = deps.maxMessageLength(chat.channel);
      const body = text.length > max ? `${text.slice(0, max - 1)}…` : text;
      deps.messenger.send(chat, { text: body }, "notice");
    }
    const phones = (["pushover", "ntfy"] as const).filter((provider) => trigger.deliver[provider]);
    if (phones.length > 0) {
      try {
        await deps.notifier.send({ title: `Magpie: ${trigger.name}`, message: text.slice(0, 1_000) }, phones);
      } catch (error) {
        deps.logger.warn({ trigger: trigger.name, error: errorMessage(error) }, "trigger-phone-failed");
        throw error;
      }
    }
  }
}
