import { parseArgs } from "node:util";
import { AgentDirectory } from "../../core/agents.js";
import { ownerIdentity } from "../../core/identity.js";
import { errorMessage } from "../../lib/errors.js";
import { silentLogger } from "../../log/logger.js";
import { createMemoryService } from "../../memory/create-memory-service.js";
import { MEMORY_CATEGORIES, type MemoryCategory, type MemoryRecord } from "../../memory/types.js";
import type { CliCommand } from "../cli-env.js";
import { jsonText } from "../terminal-output.js";

const USAGE = `Usage: magpie memory <command> [--agent <name>]
  search <query> [--limit N]            hybrid (or keyword) search, best first
  add <key> <content> [--category C]    store or update a memory (category core | daily | conversation)
  forget <key>                          delete a memory
  list [--category C] [--limit N]       newest first
  export [--all-agents]                 every memory as JSON lines on stdout`;

const exportLine = (memory: MemoryRecord): string =>
  jsonText({
    agent: memory.agent,
    key: memory.key,
    content: memory.content,
    category: memory.category,
    audience: memory.audience,
    created_at: new Date(memory.createdAt).toISOString(),
    updated_at: new Date(memory.updatedAt).toISOString(),
    access_count: memory.accessCount,
    last_accessed_at: memory.lastAccessedAt === null ? null : new Date(memory.lastAccessedAt).toISOString(),
  });

/** Whoever runs the CLI on the bot's machine is an owner: memories added here are the owners'. */
const LOCAL_OWNER = ownerIdentity().role;

const oneLine = (text: string): string => text.replace(/\s+/g, " ").trim();

/** `magpie memory search|add|forget|list|export`: the agent's long-term memory from the shell. */
export const run: CliCommand = async (argv, env) => {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    env.stderr.write(`${errorMessage(error)}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (!command || values.help) {
    (values.help ? env.stdout : env.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const category = values.category as MemoryCategory | undefined;
  if (category && !MEMORY_CATEGORIES.includes(category)) {
    env.stderr.write(`Unknown category "${category}". Use one of: ${MEMORY_CATEGORIES.join(", ")}.\n`);
    return 2;
  }
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    env.stderr.write(`--limit must be a positive whole number, got "${values.limit}".\n`);
    return 2;
  }

  const config = env.loadConfig();
  const store = env.openStore(config);
  const service = createMemoryService(config, store.db, silentLogger());
  const agent =
    values.agent ?? new AgentDirectory(config.agents, config.routes, config.llm.model).defaultAgent;
  try {
    switch (command) {
      case "search": {
        const query = rest.join(" ").trim();
        if (!query) return usageError(env, "search needs a query.");
        const result = await service.recall({
          agent,
          query,
          role: LOCAL_OWNER,
          limit: limit ?? 5,
          touch: false,
        });
        if (result.fallbackReason)
          env.stderr.write(`warning: embeddings failed, keyword search only (${result.fallbackReason})\n`);
        if (result.hits.length === 0) env.stdout.write(`No memories match "${query}".\n`);
        for (const hit of result.hits) {
          env.stdout.write(
            `${hit.score.toFixed(4)}  ${hit.memory.key} [${hit.memory.category}]  ${oneLine(hit.memory.content)}\n        ${hit.why}\n`,
          );
        }
        return 0;
      }
      case "add": {
        const [key, ...words] = rest;
        const content = words.join(" ").trim();
        if (!key || !content) return usageError(env, "add needs a key and the content.");
        const outcome = await service.store({
          agent,
          key,
          content,
          category: category ?? "core",
          role: LOCAL_OWNER,
        });
        env.stdout.write(
          `${outcome.created ? "Added" : "Updated"} ${outcome.memory.key} (${outcome.indexed}).\n`,
        );
        return 0;
      }
      case "forget": {
        const key = rest.join(" ").trim();
        if (!key) return usageError(env, "forget needs a key.");
        if (!service.forget(agent, key, LOCAL_OWNER)) {
          env.stderr.write(
            `No memory "${key}" for agent "${agent}". \`magpie memory list\` shows the keys.\n`,
          );
          return 1;
        }
        env.stdout.write(`Forgot ${key}.\n`);
        return 0;
      }
      case "list": {
        const memories = service.list(agent, { category, limit: limit ?? 50 });
        if (memories.length === 0) env.stdout.write(`No memories for agent "${agent}".\n`);
        for (const memory of memories) {
          env.stdout.write(
            `${new Date(memory.updatedAt).toISOString().slice(0, 16)}  ${memory.key} [${memory.category}]  ${oneLine(memory.content)}\n`,
          );
        }
        return 0;
      }
      case "export": {
        for (const memory of service.all(values["all-agents"] ? undefined : agent))
          env.stdout.write(`${exportLine(memory)}\n`);
        return 0;
      }
      default:
        return usageError(env, `Unknown memory command "${command}".`);
    }
  } finally {
    await service.close();
    store.close();
  }
};

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      agent: { type: "string" },
      category: { type: "string" },
      limit: { type: "string" },
      "all-agents": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function usageError(env: Parameters<CliCommand>[1], problem: string): number {
  env.stderr.write(`${problem}\n${USAGE}\n`);
  return 2;
}
