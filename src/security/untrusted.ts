import fs from "node:fs";
import path from "node:path";
import { parsePatch } from "diff";
import { z } from "zod";
import type { MagpieConfig } from "../config/schema.js";
import type { TurnProvenance, UntrustedSource } from "../core/turn-provenance.js";
import { errorMessage } from "../lib/errors.js";
import { safeParseJson } from "../lib/parse-json.js";
import { revealInvisible } from "../lib/reveal-invisible.js";
import { judgePath, strictest } from "./file-guard.js";
import { type PathScope, resolveToolPath, scopeOf } from "./path-resolver.js";
import { isWithin } from "./paths.js";
import type { ProvenanceStore } from "./provenance-store.js";
import { HostAllowList, isIpLiteral, normalizeHostname } from "./ssrf-address.js";
import { fileKey, memoryKey } from "./writes-in-flight.js";

/**
 * The rule of two (DESIGN.md → Security → "Untrusted content"), in one place: the tool dispatcher
 * (`src/tools/registry.ts`) asks `sinkOf` before every call of a turn that holds untrusted content, and
 * `sourcesOf` / `recordWrites` after every call. A turn holding untrusted content may read, summarise and answer
 * in its own chat; every action that communicates or changes lasting state is a **sink**: it needs the owner's
 * approval in an interactive turn and is refused in an unattended one (job, trigger, subagent) unless the job
 * lists that exact tool in `allowAfterUntrusted`. No tool carries its own copy of this rule.
 */

/** What the policy needs to know of a tool (the registry's `Tool`, or an MCP server's). */
export interface ToolFacts {
  name: string;
  /** Set on an MCP server's tools: whether the server is `trusted` and the tool marked read-only. */
  mcp?: { server: string; trusted: boolean; readOnly: boolean };
}

/** The call a sink rule matched: its rule ID and the exact action, as the owner is shown it. */
export interface Sink {
  rule: string;
  action: string;
}

export interface PolicyContext {
  config: MagpieConfig;
  provenance: TurnProvenance;
  /** The chat the turn answers in (its own chat: messages there stay free). */
  target: { channel: string; chatId: string };
  /** Tools the calling turn may use (what a delegated or spawned turn could get at most). */
  allowedTools: readonly string[];
  /** Who the turn acts for: a guest's memory call is the memory tool's own refusal, not this rule's. */
  role: "owner" | "guest";
  /** An owner is here to approve (an interactive owner's turn): the file guard's Warn asks them itself. */
  ownerHere: boolean;
  /** The SSRF guard refuses this URL without a lookup: its refusal, with its own code, comes first. */
  ssrfRefuses?: (url: string) => boolean;
  homeDir?: string | undefined;
  /** Only under the test harness (see `testHooks`): hosts that count as unnamed although allowHosts lists them. */
  unvouchedHosts?: readonly string[] | undefined;
  /** delegate/spawn: the tools the turn it starts would hold (the target agent's set under the caller's bounds). */
  reach?: readonly string[] | undefined;
}

/**
 * Test-only hooks of the benchmark and the attack tests, honoured only when the process runs under vitest (never
 * in a shipped Magpie, whatever its config says): `rulesOff` measures the "before" column of the injection
 * benchmark; `unvouchedHosts` lets a loopback attacker host that `security.ssrf.allowHosts` lists (so the SSRF
 * guard lets it through, as it would a public host) count as a host the owner did not name. Neither is a config
 * key: the model and the config file can't reach them.
 */
export interface UntrustedTestHooks {
  rulesOff?: boolean;
  unvouchedHosts?: readonly string[];
}

export function testHooks(hooks: UntrustedTestHooks | undefined): UntrustedTestHooks {
  return hooks && process.env.VITEST === "true" ? hooks : {};
}

/** Tools a delegated or spawned turn may hold and still count as read-only. */
const READ_ONLY_TOOLS = new Set([
  "file_read",
  "file_list",
  "file_find",
  "file_grep",
  "image_info",
  "web_fetch",
  "web_search",
  "memory_recall",
  "spill_read",
  "cron_list",
  "cron_runs",
  "trigger_list",
  "hardware_board_info",
  "ask_question",
  "invoke_skill",
]);
/**
 * The page each turn's browser is on (the `url` every browser result reports, so a click that navigated counts):
 * `type` is judged by its host. Keyed by the turn's provenance, so it lives exactly as long as the turn; a page
 * an earlier turn left open is unknown here (and `type` on it asks).
 */
const PAGE_OF = new WeakMap<TurnProvenance, string>();
const pageSchema = z.object({ url: z.string() });

/**
 * After a browser call: remembers the page its result says the browser is on (`url` of a JSON result, or the
 * `URL:` line heading a `read`); a result that names none keeps the last; a failed call forgets it.
 */
export function notePage(tool: ToolFacts, output: string, provenance: TurnProvenance, failed: boolean): void {
  if (tool.name !== "browser") return;
  if (failed) {
    PAGE_OF.delete(provenance);
    return;
  }
  const page = safeParseJson(output, pageSchema);
  // The `read` header is the first lines: `# title` then `URL: …` (src/tools/browser.ts).
  const line = page.success
    ? undefined
    : output
        .slice(0, 4_096)
        .split("\n", 3)
        .find((text) => text.startsWith("URL: "));
  const url = page.success ? page.data.url : line?.slice(5).trim();
  if (url) PAGE_OF.set(provenance, url);
}

/** Subagents get at most these (src/tools/tool-sets.ts SUBAGENT_SET; kept here to stay below the tools layer). */
const SUBAGENT_TOOLS = ["shell", "file_read", "file_write", "file_edit", "git_operations", "http_request"];
const GIT_READS = new Set(["status", "diff", "log"]);
const SCHEDULING = new Set([
  "cron_add",
  "cron_update",
  "cron_remove",
  "cron_run",
  "schedule",
  "trigger_add",
  "trigger_remove",
]);
/**
 * Tools that talk to the outside or to devices (a broker, a pin, a connected app, a browser on the owner's screen).
 * `notify` and `pushover` are not here: they reach only the owner's own phone (set in the config, not by the
 * model) — answering the owner, as in the turn's own chat; what they send passes the output filter.
 */
const COMMUNICATING = new Set(["mqtt_publish", "gpio", "serial", "i2c", "spi", "browser_open"]);
const FILE_WRITES = new Set(["file_write", "file_edit", "file_append"]);

type Input = Record<string, unknown>;
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** The sink rule a call matches in a tainted turn, or null when it stays free. */
export async function sinkOf(tool: ToolFacts, input: Input, context: PolicyContext): Promise<Sink | null> {
  const name = tool.name;
  if (tool.mcp) {
    return tool.mcp.readOnly
      ? null
      : { rule: "untrusted.mcp", action: `${name} (MCP server '${tool.mcp.server}', not read-only)` };
  }
  switch (name) {
    case "message": {
      const channel = str(input.channel) ?? context.target.channel;
      const chatId = str(input.chat_id) ?? (channel === context.target.channel ? context.target.chatId : "?");
      if (channel === context.target.channel && chatId === context.target.chatId) return null;
      return { rule: "untrusted.other_chat", action: `message to ${channel} chat ${chatId}` };
    }
    case "http_request":
    case "web_fetch": {
      const url = str(input.url) ?? "";
      if (context.ssrfRefuses?.(url)) return null;
      const method = name === "http_request" ? (str(input.method) ?? "GET") : "GET";
      if (method !== "GET") return { rule: "untrusted.non_get", action: `${method} ${url}` };
      return hostIsNamed(url, context) ? null : { rule: "untrusted.unnamed_host", action: `GET ${url}` };
    }
    case "browser": {
      const action = str(input.action);
      if (action === "open") {
        const url = str(input.url) ?? "";
        if (context.ssrfRefuses?.(url)) return null;
        return hostIsNamed(url, context)
          ? null
          : { rule: "untrusted.unnamed_host", action: `browser open ${url}` };
      }
      // Typing into a page sends text to its site (a form, a chat): free only on a page this turn opened on a
      // host the owner or allowHosts names, as opening it was.
      if (action === "type") {
        const page = PAGE_OF.get(context.provenance);
        return page && hostIsNamed(page, context)
          ? null
          : { rule: "untrusted.browser_input", action: `browser type into ${str(input.selector) ?? "?"}` };
      }
      return null;
    }
    case "shell":
      return { rule: "untrusted.shell", action: `shell: ${str(input.command) ?? ""}` };
    case "git_operations": {
      const operation = str(input.operation) ?? "";
      if (GIT_READS.has(operation)) return null;
      const files = Array.isArray(input.files) ? input.files.map(String) : [];
      const args = [operation, ...files, str(input.branch) ?? ""];
      return { rule: "untrusted.git", action: `git ${args.filter(Boolean).join(" ")}` };
    }
    case "memory_store":
    case "memory_forget":
      // A guest's turn can't touch the owners' memory at all: the memory tool refuses it with its own code.
      if (context.role !== "owner") return null;
      return { rule: "untrusted.memory", action: `${name} ${str(input.key) ?? ""}`.trim() };
    case "composio":
      // Listing the apps or an app's tools reads; execute and connect act on the owner's accounts.
      return str(input.action) === "list"
        ? null
        : { rule: "untrusted.communicate", action: `composio ${JSON.stringify(input).slice(0, 400)}` };
    case "delegate":
    case "spawn": {
      // The target's own reach when the tool knows it (an agent with fewer tools than the caller is judged and shown
      // by its own); otherwise the caller's tools bound it.
      const reach =
        context.reach ??
        (name === "spawn"
          ? SUBAGENT_TOOLS.filter((t) => context.allowedTools.includes(t))
          : context.allowedTools);
      const writes = reach.filter((t) => !READ_ONLY_TOOLS.has(t) && t !== "delegate" && t !== "spawn");
      if (writes.length === 0) return null;
      const what =
        name === "spawn" ? str(input.task) : `${str(input.agent) ?? ""}: ${str(input.prompt) ?? ""}`;
      return {
        rule: "untrusted.delegation",
        action: `${name} with ${writes.join(", ")} — ${(what ?? "").slice(0, 300)}`,
      };
    }
    case "apply_patch":
      return patchSink(str(input.patch) ?? "", context);
    case "attachment_save":
      return str(input.path) ? writeSink(name, str(input.path)!, context, "write") : null;
    case "schedule":
      // Listing jobs or looking at one changes nothing; every other action is a change.
      if (str(input.action) === "list" || str(input.action) === "get") return null;
      return { rule: "untrusted.schedule", action: `schedule ${JSON.stringify(input).slice(0, 400)}` };
    default:
      if (SCHEDULING.has(name))
        return { rule: "untrusted.schedule", action: `${name} ${JSON.stringify(input).slice(0, 400)}` };
      if (COMMUNICATING.has(name))
        return { rule: "untrusted.communicate", action: `${name} ${JSON.stringify(input).slice(0, 400)}` };
      if (FILE_WRITES.has(name)) return writeSink(name, str(input.path) ?? "", context, "write");
      return null;
  }
}

/** A write: outside the workspace, under skills/, or over a file this turn did not create. */
async function writeSink(
  tool: string,
  requested: string,
  context: PolicyContext,
  kind: "write" | "delete",
): Promise<Sink | null> {
  const scope = scopeOf(context.config, context.homeDir);
  let resolved: Awaited<ReturnType<typeof resolveToolPath>>;
  try {
    resolved = await resolveToolPath(requested, scope);
  } catch {
    return null; // The tool refuses the path itself.
  }
  // The file guard's refusal comes first for the paths it guards (DESIGN → "One guard per resource"): a path it
  // denies, or one it would ask about with no owner here, is refused by the tool with the guard's own code.
  const worst = strictest(judgePath(resolved, "write", context.config.security.level, scope));
  const guardAsks = context.config.security.approvals.require.includes("guard:warn");
  if (worst?.verdict === "deny" || (worst?.verdict === "warn" && guardAsks && !context.ownerHere))
    return null;
  const { real, exists } = resolved;
  const workspace = realOrSelf(scope.workspace);
  if (!isWithin(real, workspace))
    return { rule: "untrusted.write_outside", action: `${tool} ${real} (outside the workspace)` };
  if (isWithin(real, path.join(workspace, "skills")))
    return { rule: "untrusted.skills", action: `${tool} ${real} (a skill)` };
  if (kind === "delete" && !context.provenance.created.has(real))
    return { rule: "untrusted.delete", action: `delete ${real}` };
  if (exists && !context.provenance.created.has(real))
    return {
      rule: "untrusted.overwrite",
      action: `${tool} ${real} (overwrites a file this turn did not create)`,
    };
  return null;
}

async function patchSink(patch: string, context: PolicyContext): Promise<Sink | null> {
  for (const file of patchFiles(patch)) {
    const sink = await writeSink("apply_patch", file.path, context, file.delete ? "delete" : "write");
    if (sink) return sink;
  }
  return null;
}

/** The files a unified diff touches (as apply_patch reads its headers), and whether it deletes them. */
function patchFiles(patch: string): Array<{ path: string; delete: boolean }> {
  let parsed: ReturnType<typeof parsePatch>;
  try {
    parsed = parsePatch(patch);
  } catch {
    return [];
  }
  const strip = (name: string | undefined): string | null => {
    if (!name) return null;
    const trimmed = name.trim().split("\t")[0]!;
    if (trimmed === "/dev/null") return trimmed;
    return trimmed.startsWith("a/") || trimmed.startsWith("b/") ? trimmed.slice(2) : trimmed;
  };
  return parsed.flatMap((file): Array<{ path: string; delete: boolean }> => {
    const from = strip(file.oldFileName);
    const to = strip(file.newFileName);
    if (to === "/dev/null" && from) return [{ path: from, delete: true }];
    const target = to ?? from;
    return target && target !== "/dev/null" ? [{ path: target, delete: false }] : [];
  });
}

function realOrSelf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** True when the owner's own words in this turn, or `security.ssrf.allowHosts`, name the URL's host. */
export function hostIsNamed(url: string, context: PolicyContext): boolean {
  let host: string;
  try {
    host = normalizeHostname(new URL(url).hostname);
  } catch {
    return false;
  }
  if (namedHosts(context.provenance.ownerWords).has(host)) return true;
  if (context.unvouchedHosts?.includes(host)) return false;
  const allow = new HostAllowList(context.config.security.ssrf.allowHosts);
  return allow.allowsName(host) || (isIpLiteral(host) && allow.allowsAddress(host, host));
}

/**
 * The hosts a text names: URLs (`https://example.com/x`) and bare host names (`example.com`, `192.168.1.5:8080`).
 * Hand-written over a split on whitespace and brackets (one linear pass); each word goes through the URL parser.
 */
export function namedHosts(text: string): Set<string> {
  const hosts = new Set<string>();
  for (const raw of text.split(/[\s<>"'()[\]{}|,]+/)) {
    let end = raw.length;
    // Trailing punctuation ends a sentence, not a host (a loop: an anchored `[.:;!?]+$` is quadratic).
    while (end > 0 && ".:;!?".includes(raw[end - 1]!)) end--;
    const word = raw.slice(0, end);
    if (!word || word.length > 2_000) continue;
    const candidate = word.includes("://") ? word : `http://${word}`;
    let host: string;
    try {
      host = normalizeHostname(new URL(candidate).hostname);
    } catch {
      continue;
    }
    if (word.includes("://") || (host.includes(".") && /^[a-z0-9.-]+$/.test(host) && !host.endsWith(".")))
      hosts.add(host);
  }
  return hosts;
}

/** Labels are attacker-chosen text (a URL, a subject): one line, invisible characters shown, at most 120 chars. */
export function sourceLabel(text: string): string {
  const line = revealInvisible(text.replace(/[\r\n\t]+/g, " ")).replaceAll("`", "'");
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

export interface CallFacts {
  tool: ToolFacts;
  input: Input;
  /** The text the model gets back. */
  output: string;
  /** The call failed (a tool error, not a guard's refusal: a refused call read nothing and counts as none). */
  failed?: boolean;
  agent: string;
  config: MagpieConfig;
  homeDir?: string | undefined;
  store: ProvenanceStore;
}

/** The untrusted sources a call's result brings into the turn (after it ran). */
export async function sourcesOf(call: CallFacts): Promise<UntrustedSource[]> {
  const { tool, input } = call;
  if (tool.mcp) return tool.mcp.trusted ? [] : [{ kind: "mcp", label: `MCP server ${tool.mcp.server}` }];
  switch (tool.name) {
    case "web_fetch":
    case "http_request":
      return [{ kind: "web", label: sourceLabel(str(input.url) ?? "a web address") }];
    case "web_search":
      return [{ kind: "web", label: sourceLabel(`web search results for "${str(input.query) ?? ""}"`) }];
    case "browser":
      return [
        { kind: "web", label: sourceLabel(`a browser page${str(input.url) ? ` ${str(input.url)}` : ""}`) },
      ];
    case "composio":
      return [{ kind: "web", label: "a Composio app's answer" }];
    // `shell` is judged from its command's words before it runs (src/security/shell-provenance.ts), in the registry.
    case "cron_runs":
      return [{ kind: "file", label: "output of earlier job runs" }];
    case "file_read":
    case "file_grep":
      // A failed read's error is Magpie's own text (not found, too big): nothing of the file entered the turn.
      return call.failed ? [] : fileSources(str(input.path) ?? ".", call);
    case "memory_recall":
      return memorySources(call);
    default:
      return [];
  }
}

async function fileSources(requested: string, call: CallFacts): Promise<UntrustedSource[]> {
  const scope = scopeOf(call.config, call.homeDir);
  let real: string;
  let isDirectory: boolean;
  try {
    ({ real, isDirectory } = await resolveToolPath(requested, scope));
  } catch {
    return [];
  }
  if (trustedPath(real, call.config, scope)) return [];
  const label = `file ${requested}`;
  if (isDirectory) return [{ kind: "file", label: sourceLabel(`files under ${requested}`) }];
  const origin = call.store.fileOrigin(real);
  if (origin.trusted) return [];
  const first = origin.sources[0];
  return [
    {
      kind: "file",
      label: sourceLabel(
        first
          ? `${label} (written after reading ${first.label})`
          : `${label} (not written by Magpie in an owner's turn)`,
      ),
    },
  ];
}

/** Under a folder of `security.trustedPaths` (relative entries count from the workspace). */
function trustedPath(real: string, config: MagpieConfig, scope: PathScope): boolean {
  return config.security.trustedPaths.some((entry) =>
    isWithin(
      real,
      realOrSelf(
        path.resolve(scope.workspace, entry.startsWith("~/") ? path.join(scope.home, entry.slice(2)) : entry),
      ),
    ),
  );
}

function memorySources(call: CallFacts): UntrustedSource[] {
  const tainted = call.store.taintedMemories(call.agent);
  if (tainted.size === 0) return [];
  const found: UntrustedSource[] = [];
  for (const [key, sources] of tainted) {
    if (!call.output.includes(JSON.stringify(key))) continue;
    found.push({
      kind: "memory",
      label: sourceLabel(
        `memory "${key}" (stored after reading ${sources[0]?.label ?? "untrusted content"})`,
      ),
    });
  }
  return found;
}

/**
 * Records the provenance of what a call wrote: files (path, size, time) and memories, with the turn's sources and
 * those of any other turn writing the same target meanwhile (src/security/writes-in-flight.ts).
 */
export async function recordWrites(
  call: CallFacts,
  provenance: TurnProvenance,
  existedBefore: ReadonlySet<string>,
): Promise<void> {
  const { tool, input, store } = call;
  try {
    if (tool.name === "memory_store") {
      const key = str(input.key) ?? "";
      store.recordMemory(call.agent, key, store.inFlight.sourcesOf(memoryKey(call.agent, key), provenance));
    } else if (tool.name === "memory_forget") {
      // Forgotten — unless another turn stored it meanwhile: then it is that turn's, as tainted as that turn.
      const key = str(input.key) ?? "";
      store.recordMemory(
        call.agent,
        key,
        store.inFlight.sourcesOf(memoryKey(call.agent, key), provenance, false),
      );
    } else if (writesFiles(tool)) {
      const scope = scopeOf(call.config, call.homeDir);
      for (const file of writtenFiles(tool, input)) {
        const { real, exists } = await resolveToolPath(file.path, scope);
        if (file.delete || !exists) {
          store.forgetFile(real);
          continue;
        }
        if (!existedBefore.has(real)) provenance.created.add(real);
        // An attachment is what someone sent, whoever's turn saved it.
        const own =
          tool.name === "attachment_save"
            ? [{ kind: "attachment" as const, label: "a chat attachment" }]
            : [];
        store.recordFile(real, [...store.inFlight.sourcesOf(fileKey(real), provenance), ...own]);
      }
    }
  } catch (error) {
    // A missing record makes the file count as untrusted later: the safe side.
    throw new Error(`provenance record failed: ${errorMessage(error)}`);
  }
}

const writesFiles = (tool: ToolFacts): boolean =>
  FILE_WRITES.has(tool.name) || tool.name === "attachment_save" || tool.name === "apply_patch";

function writtenFiles(tool: ToolFacts, input: Input): { path: string; delete: boolean }[] {
  if (tool.name === "apply_patch") return patchFiles(str(input.patch) ?? "");
  const target = writesFiles(tool) ? str(input.path) : undefined;
  return target ? [{ path: target, delete: false }] : [];
}

/**
 * What a call may write, before it runs: the real path of each file (true when it exists already, so the turn
 * knows which ones it created) and the keys of its targets for `WritesInFlight` (its files and its memory).
 */
export async function writeTargets(
  tool: ToolFacts,
  input: Input,
  agent: string,
  config: MagpieConfig,
  homeDir?: string,
): Promise<{ existed: Set<string>; keys: string[] }> {
  const existed = new Set<string>();
  const keys: string[] = [];
  if (tool.name === "memory_store" || tool.name === "memory_forget")
    keys.push(memoryKey(agent, str(input.key) ?? ""));
  const files = writtenFiles(tool, input);
  // Most calls write no file: Magpie's state paths (a realpath each) are not resolved for them.
  if (files.length === 0) return { existed, keys };
  const scope = scopeOf(config, homeDir);
  for (const file of files) {
    try {
      const { real, exists } = await resolveToolPath(file.path, scope);
      keys.push(fileKey(real));
      if (exists) existed.add(real);
    } catch {
      // The tool refuses the path itself.
    }
  }
  return { existed, keys };
}
