import type { ActionRunner, ActionSource, ActionWork } from "../scheduler/action-runner.js";
import { renderTemplate } from "./template.js";
import type { TriggerDefinition, TriggerEvent } from "./trigger.js";
import { sourceTools } from "./trigger-authority.js";
import type { ActionRunner as TriggerActionRunner } from "./trigger-engine.js";
import { quoteEvent } from "./untrusted-event.js";
import { runWatch } from "./watch-triggers.js";

export interface TriggerActionDeps {
  /** The one action runner (authority, approver, target, execution, delivery). */
  runner: ActionRunner;
  /** Longest a command or prompt run may take. */
  runTimeoutMs: number;
}

/** A trigger as the action runner names it: `trigger:<name>`, runs of origin `event`. */
export function triggerSource(trigger: Pick<TriggerDefinition, "name">): ActionSource {
  return { kind: "trigger", id: trigger.name, label: `trigger "${trigger.name}"`, origin: "event" };
}

function triggerWork(trigger: TriggerDefinition, event: TriggerEvent): ActionWork {
  const action = trigger.do;
  if ("watch" in action) throw new Error("a watch report is not work to run");
  if ("message" in action) return { kind: "message", text: renderTemplate(action.message, event) };
  if ("command" in action) return { kind: "shell", command: action.command };
  // The request carries the event as quoted, untrusted data.
  return {
    kind: "prompt",
    prompt: `${action.prompt}\n\n${quoteEvent(trigger.name, event)}`,
    agent: action.agent,
    toolSet: action.toolSet,
    untrusted: `the payload of trigger "${trigger.name}"`,
    allowAfterUntrusted: action.allowAfterUntrusted,
  };
}

/**
 * The three actions, each carrying the trigger's creator's authority like a job run, through the one action
 * runner: `message` is the template filled from the event (no LLM); `command` goes through the registered
 * `shell` tool (sandbox, guards, audit); `prompt` is an isolated agent turn of origin `event` whose request
 * quotes the event as untrusted data, with the trigger's tool set narrowed to its creator's. What each produces
 * goes to `deliver`, whose chat is checked again at delivery. A trigger made from `hardware.watch` reports its
 * edge through the same runner.
 */
export function createTriggerActions(deps: TriggerActionDeps): TriggerActionRunner {
  let runs = 0;
  return async (trigger, event, context) => {
    // A `hardware.watch` pin (src/triggers/watch-triggers.ts): its report goes to each watch's targets.
    if ("watch" in trigger.do) return runWatch(deps.runner, trigger.do.watch, event, context);
    const from = triggerSource(trigger);
    const work = triggerWork(trigger, event);
    const { ok, text, refused } = await deps.runner.run({
      from,
      owner: {
        creator: trigger.creator,
        source: trigger.source,
        createdFrom: trigger.createdFrom,
        chat: trigger.deliver.chat,
      },
      work,
      run: ++runs,
      signal: AbortSignal.timeout(deps.runTimeoutMs),
      reaches: sourceTools(trigger),
    });
    const report =
      work.kind === "shell" && !refused
        ? `${ok ? "✅" : "❌"} ${trigger.name}\n${text || "(no output)"}`
        : text;
    await deps.runner.deliver(from, trigger.deliver, report);
  };
}
