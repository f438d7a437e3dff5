import { z } from "zod";
import type { KvRepository } from "../store/kv.js";
import type { AgentDirectory } from "./agents.js";
import type { SlashCommand } from "./commands.js";

/** Where a chat's `/model` choice is kept (survives restarts). */
export function sessionModelKey(sessionKey: string): string {
  return `model:${sessionKey}`;
}

/** The model a chat chose with `/model <name>`, if any. */
export function sessionModel(kv: KvRepository, sessionKey: string): string | undefined {
  return kv.get(sessionModelKey(sessionKey), z.string());
}

/**
 * `/model` lists the configured models (primary, fallbacks, agents' models) and this chat's; `/model <name>` sets
 * this chat's model (owners only — enforced centrally), persisted; `/model reset` goes back to the default.
 */
export function modelCommand(deps: {
  kv: KvRepository;
  agents: AgentDirectory;
  primary: string | null;
  fallbacks: string[];
}): SlashCommand {
  const configured = () => {
    const names = new Set<string>();
    if (deps.primary) names.add(deps.primary);
    for (const name of deps.fallbacks) names.add(name);
    for (const agent of deps.agents.names()) {
      const model = deps.agents.get(agent)?.model;
      if (model) names.add(model);
    }
    return [...names];
  };
  return {
    name: "model",
    description: "Show the models, or choose this chat's model",
    usage: "model [<name> | reset]",
    ownerOnly: true,
    run({ args, sessionKey, message }) {
      if (!deps.primary) return "No language model is configured, so there is nothing to choose.";
      const chosen = sessionModel(deps.kv, sessionKey);
      const wanted = args.trim();
      if (!wanted) {
        const current = chosen ?? deps.agents.forMessage(message).model;
        const lines = [
          `This chat uses ${current}${chosen ? " (chosen with /model)" : " (the default)"}.`,
          `Primary: ${deps.primary}.`,
          deps.fallbacks.length
            ? `Fallbacks: ${deps.fallbacks.join(", ")}.`
            : "No fallbacks (llm.fallbacks).",
          `Configured: ${configured().join(", ")}.`,
          "Change it with /model <name>; go back with /model reset.",
        ];
        return { text: lines.join("\n"), format: "plain" };
      }
      if (wanted === "reset") {
        deps.kv.delete(sessionModelKey(sessionKey));
        return `This chat is back to the default model (${deps.agents.forMessage(message).model}).`;
      }
      const names = configured();
      if (!names.includes(wanted)) {
        return `"${wanted}" is not a configured model. Choose one of: ${names.join(", ")} (or add it to llm.fallbacks or an agent's model).`;
      }
      deps.kv.set(sessionModelKey(sessionKey), wanted);
      return `This chat now uses ${wanted}. /model reset goes back to the default.`;
    },
  };
}
