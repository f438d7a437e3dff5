import { enabledChatChannels } from "../../channels/index.js";
import type { TriggersConfig } from "../config/sections/triggers.js";
import { ConfigError } from "../core/errors.js";
import type { CliEnv } from "./cli-env.js";

/** Trigger predicates are parsed and type-checked like at start-up (the CEL engine loads only when there are any). */
async function checkTriggerPredicates(triggers: TriggersConfig): Promise<void> {
  const withWhen = Object.entries(triggers).filter(([, trigger]) => trigger.when !== undefined);
  if (withWhen.length === 0) return;
  const { predicateProblem } = await import("../triggers/predicate.js");
  const problems = withWhen.flatMap(([name, trigger]) => {
    const problem = predicateProblem(trigger.when ?? "");
    return problem ? [`triggers.${name}.when: ${problem}`] : [];
  });
  if (problems.length > 0) throw new ConfigError(problems);
}

/** `magpie config check`: validates the configuration without starting; lists every problem by key path. */
export async function runConfigCommand(argv: string[], env: CliEnv): Promise<number> {
  if (argv[0] !== "check" || argv.length > 1) {
    env.stderr.write("Usage: magpie config check [--config <path>]\n");
    return 2;
  }
  const config = env.loadConfig();
  await checkTriggerPredicates(config.triggers);
  const channels = enabledChatChannels(config);
  const llm =
    config.llm.apiKey || config.llm.baseUrl
      ? `${config.llm.model} at ${config.llm.baseUrl ?? "api.openai.com"}`
      : "none (slash commands only)";
  env.stdout.write(
    [
      `✓ Configuration is valid (${config.sourcePath ?? "environment variables only"}).`,
      `  data: ${config.dataDir}`,
      `  workspace: ${config.workspace}`,
      `  LLM: ${llm}`,
      `  channels: ${channels.join(", ") || "none (console only)"}`,
      `  security level: ${config.security.level}`,
      "",
    ].join("\n"),
  );
  return 0;
}
