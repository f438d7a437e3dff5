import { accessSync, constants, mkdirSync } from "node:fs";
import { enabledChannelEntries, sectionOf } from "../../../channels/catalog.js";
import type { MagpieConfig } from "../../config/schema.js";
import { hardwareChecks } from "../../hardware/device-checks.js";
import { errorMessage } from "../../lib/errors.js";
import { type ChainEntry, chainEntries, entryBaseUrl } from "../../llm/chain-entries.js";
import { isLlmConfigured } from "../../llm/create-model.js";
import { voiceChecks } from "../../voice/voice-doctor.js";
import type { CliCommand, CliEnv } from "../cli-env.js";

type Verdict = "ok" | "fail" | "skip";
interface Check {
  name: string;
  verdict: Verdict;
  detail: string;
  fix?: string;
}

const TIMEOUT_MS = 6_000;
const MARK: Record<Verdict, string> = { ok: "✓", fail: "✗", skip: "–" };

/**
 * `magpie doctor`: config, database, workspace, LLM reachability, channel auth and hardware access — each a
 * ✓/✗ line with the fix. Exit code 1 when anything failed.
 */
export const run: CliCommand = async (_argv, env) => {
  const checks: Check[] = [];
  let config: MagpieConfig;
  try {
    config = env.loadConfig();
    checks.push({ name: "config", verdict: "ok", detail: config.sourcePath ?? "environment variables only" });
  } catch (error) {
    checks.push({
      name: "config",
      verdict: "fail",
      detail: errorMessage(error),
      fix: "run `magpie config check`",
    });
    return report(checks, env);
  }
  checks.push(checkDatabase(config, env));
  checks.push(checkWritable("workspace", config.workspace));
  checks.push(await checkSandbox(config));
  checks.push(...(await checkLlm(config)));
  checks.push(...(await checkChannels(config)));
  checks.push(checkPushover(config));
  checks.push(checkNtfy(config));
  checks.push(...checkHardware(config));
  checks.push(...(await checkMcpServers(config)));
  checks.push(...voiceChecks(config));
  return report(checks, env);
};

function report(checks: Check[], env: CliEnv): number {
  for (const check of checks) {
    const fix = check.verdict === "fail" && check.fix ? ` — fix: ${check.fix}` : "";
    env.stdout.write(`${MARK[check.verdict]} ${check.name}: ${check.detail}${fix}\n`);
  }
  const failed = checks.filter((check) => check.verdict === "fail").length;
  env.stdout.write(failed ? `\n${failed} problem(s) found.\n` : "\nEverything looks good.\n");
  return failed ? 1 : 0;
}

function checkDatabase(config: MagpieConfig, env: CliEnv): Check {
  try {
    const store = env.openStore(config);
    const integrity = store.db.pragma("quick_check", { simple: true });
    const mode = store.db.pragma("journal_mode", { simple: true });
    store.close();
    return integrity === "ok"
      ? {
          name: "database",
          verdict: "ok",
          detail: `${config.dataDir}/magpie.db (${mode}, migrations applied)`,
        }
      : {
          name: "database",
          verdict: "fail",
          detail: `integrity check: ${integrity}`,
          fix: "restore data/magpie.db from a backup",
        };
  } catch (error) {
    return {
      name: "database",
      verdict: "fail",
      detail: errorMessage(error),
      fix: `make ${config.dataDir} writable by this user (dataDir)`,
    };
  }
}

async function checkSandbox(config: MagpieConfig): Promise<Check> {
  const { sandboxStatus, SANDBOX_FIX } = await import("../../security/sandbox.js");
  const status = await sandboxStatus(config.tools.shell);
  if (status.active)
    return { name: "sandbox", verdict: "ok", detail: `bubblewrap sandbox active (${status.reason})` };
  return {
    name: "sandbox",
    verdict: "fail",
    detail: `shell, git and command jobs run unsandboxed: ${status.reason}`,
    fix: status.mode === "off" ? "set tools.shell.sandbox: auto" : SANDBOX_FIX,
  };
}

function checkWritable(name: string, directory: string): Check {
  try {
    mkdirSync(directory, { recursive: true });
    accessSync(directory, constants.W_OK);
    return { name, verdict: "ok", detail: directory };
  } catch (error) {
    return {
      name,
      verdict: "fail",
      detail: errorMessage(error),
      fix: `create ${directory} and make it writable`,
    };
  }
}

async function probe(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body };
}

async function checkLlm(config: MagpieConfig): Promise<Check[]> {
  if (!isLlmConfigured(config)) {
    return [
      {
        name: "llm",
        verdict: "skip",
        detail: "not configured (slash commands only) — set OPENAI_API_KEY to chat",
      },
    ];
  }
  const entries = chainEntries(config);
  return Promise.all(
    entries.map((entry, index) =>
      checkChainEntry(entry, entry.model ?? config.llm.model, index === 0 ? "llm" : `llm fallback ${index}`),
    ),
  );
}

/** One entry of the model chain: reachable, the key accepted, and the model known to the server. */
async function checkChainEntry(entry: ChainEntry, model: string, name: string): Promise<Check> {
  const base = entryBaseUrl(entry);
  const headers: Record<string, string> = entry.apiKey ? { authorization: `Bearer ${entry.apiKey}` } : {};
  try {
    const { status, body } = await probe(`${base}/models`, { headers });
    if (status === 401 || status === 403) {
      return {
        name,
        verdict: "fail",
        detail: `${base} rejected the API key (${status})`,
        fix: `check ${entry.keyHint}`,
      };
    }
    if (status >= 500) {
      return {
        name,
        verdict: "fail",
        detail: `${base} answered ${status}`,
        fix: `check the provider's status or ${entry.configPath}.baseUrl`,
      };
    }
    const listed = listedModels(body);
    // Servers without a model list (or with one that omits aliases) are given the benefit of the doubt.
    if (status !== 200 || !listed || listed.some((id) => sameModel(id, model))) {
      return { name, verdict: "ok", detail: `${base} reachable (model ${model})` };
    }
    const retrieved = await probe(`${base}/models/${encodeURIComponent(model)}`, { headers });
    if (retrieved.status === 404) {
      const offered = listed.slice(0, 5).join(", ") + (listed.length > 5 ? ", …" : "");
      return {
        name,
        verdict: "fail",
        detail: `${base} has no model "${model}"${listed.length ? ` (it offers ${offered})` : ""}`,
        fix: `check ${entry.modelHint}, or pull the model on a local server (ollama pull ${model})`,
      };
    }
    return { name, verdict: "ok", detail: `${base} reachable (model ${model})` };
  } catch (error) {
    return {
      name,
      verdict: "fail",
      detail: `cannot reach ${base}: ${errorMessage(error)}`,
      fix: `start the LLM server or correct ${entry.configPath === "llm" ? "OPENAI_BASE_URL / llm.baseUrl" : `${entry.configPath}.baseUrl`}`,
    };
  }
}

/** Model ids from a GET /models answer ({data: [{id}]}, as OpenAI, Ollama, llama.cpp and vLLM send). */
function listedModels(body: unknown): string[] | null {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return null;
  return data.flatMap((item) => (typeof item?.id === "string" ? [item.id] : []));
}

/** Ollama lists `llama3.2:latest` for a model asked for as `llama3.2`. */
function sameModel(listed: string, wanted: string): boolean {
  return listed === wanted || listed === `${wanted}:latest`;
}

async function checkChannels(config: MagpieConfig): Promise<Check[]> {
  const checks: Check[] = [];
  for (const entry of enabledChannelEntries(config)) {
    checks.push(...(await entry.doctor(sectionOf(config, entry), probe)));
  }
  if (checks.length === 0)
    checks.push({ name: "channels", verdict: "skip", detail: "no chat channel enabled (console only)" });
  return checks;
}

/** ntfy needs a server and a topic; the topic isn't printed (on ntfy.sh knowing it is reading it). */
function checkNtfy(config: MagpieConfig): Check {
  const { url, topic } = config.notify.ntfy;
  if (!url && !topic) return { name: "ntfy", verdict: "skip", detail: "not configured" };
  if (!url || !topic) {
    return {
      name: "ntfy",
      verdict: "fail",
      detail: `only the ${url ? "url" : "topic"} is set`,
      fix: "set both NTFY_URL and NTFY_TOPIC (notify.ntfy.url/topic)",
    };
  }
  return { name: "ntfy", verdict: "ok", detail: `publishing to ${url}` };
}

function checkPushover(config: MagpieConfig): Check {
  const { token, user } = config.notify.pushover;
  if (!token && !user) return { name: "pushover", verdict: "skip", detail: "not configured" };
  if (!token || !user) {
    return {
      name: "pushover",
      verdict: "fail",
      detail: "only one of token and user is set",
      fix: "set both PUSHOVER_TOKEN and PUSHOVER_USER_KEY (notify.pushover.token/user)",
    };
  }
  return { name: "pushover", verdict: "ok", detail: "token and user key set" };
}

function checkHardware(config: MagpieConfig): Check[] {
  return hardwareChecks(config.hardware);
}

/** Each enabled MCP server: started (or reached), `tools/list` answered, stopped again. */
async function checkMcpServers(config: MagpieConfig): Promise<Check[]> {
  const entries = Object.entries(config.mcpServers);
  if (entries.length === 0) return [];
  const { McpConnection } = await import("../../mcp/mcp-connection.js");
  const { silentLogger } = await import("../../log/logger.js");
  return Promise.all(
    entries.map(async ([name, server]): Promise<Check> => {
      const label = `mcp ${name}`;
      if (!server.enabled) return { name: label, verdict: "skip", detail: "disabled" };
      const connection = new McpConnection({
        name,
        config: server,
        logger: silentLogger(),
        connectTimeoutMs: 10_000,
      });
      try {
        const tools = await connection.connectOnce();
        return {
          name: label,
          verdict: "ok",
          detail: `${connection.transportKind}, ready, ${tools.length} tools`,
        };
      } catch (error) {
        return {
          name: label,
          verdict: "fail",
          detail: `${connection.transportKind}: ${errorMessage(error)}`,
          fix: server.command
            ? `check mcpServers.${name}.command and args (run it by hand: ${server.command} ${server.args.join(" ")})`
            : `check that mcpServers.${name}.url is reachable and its headers`,
        };
      } finally {
        await connection.stop();
      }
    }),
  );
}
