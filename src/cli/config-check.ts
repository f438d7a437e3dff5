import { enabledChatChannels } from "../../channels/index.js";
import { checkTriggerPredicates } from "../triggers/check-predicates.js";
import type { CliEnv } from "./cli-env.js";

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
