import type { MagpieConfig } from "../config/schema.js";
import { mcpCommand } from "../mcp/mcp-command.js";
import type { McpManager } from "../mcp/mcp-manager.js";
import type { McpServerStatus } from "../mcp/mcp-status.js";
import { scopeOf } from "../security/path-resolver.js";
import { SkillApprovals } from "../skills/skill-approvals.js";
import { SkillCatalog, skillDirs } from "../skills/skill-catalog.js";
import { skillsCommand } from "../skills/skills-command.js";
import { skillsPrompt } from "../skills/skills-prompt.js";
import type { AppContext, MagpieFeature } from "./feature.js";

/** First restart delay of a failed MCP server; tests shorten it. */
export const mcpTiming = { backoffMs: 1_000 };

/**
 * MCP servers as tools and skills. MCP servers start in the background after ready (the SDK is loaded only when
 * a server is enabled); their tools join the registry as `mcp__<server>__<tool>`. Skills are read on demand,
 * listed in the system prompt through a recall hook, and served by `invoke_skill`.
 */
export const mcpFeature: MagpieFeature = {
  name: "mcp",
  provides: ["skills"],
  setup(config, app) {
    const logger = app.logger.child({ component: "skills" });
    const catalog = new SkillCatalog({
      dirs: skillDirs(config.workspace, config.skills.dirs),
      // Skills are read as the file tools read: the same scope, level and Magpie-state list.
      guard: { scope: () => scopeOf(config), level: () => config.security.level },
      onProblem: (problem) => logger.warn(problem, "skill-invalid"),
      onRefused: (refusal) => logger.warn(refusal, "skill-refused"),
      // Pinned skills: read per scan, so a reloaded skills.requireApproval applies at once.
      approval: {
        required: () => config.skills.requireApproval,
        approvals: new SkillApprovals(app.store.db),
      },
    });
    app.services.skills = catalog;
    // Read at each turn: a reloaded security.guestToolSet decides whether guests see the skills.
    const guestsMayRead = () =>
      app.tools.resolveToolSet(config.security.guestToolSet).includes("invoke_skill");

    // Header values and env values are secrets more often than not: redacted from logs, results and requests.
    redactHeaders(config, app);
    const servers = () => config.mcpServers;
    let manager: Promise<McpManager> | null = null;
    const ensure = () => {
      manager ??= import("../mcp/mcp-manager.js").then(({ McpManager }) => {
        const created = new McpManager({
          servers: servers(),
          tools: app.tools,
          logger: app.logger.child({ component: "mcp" }),
          workspace: config.workspace,
          backoffMs: mcpTiming.backoffMs,
        });
        created.start();
        managers.set(app, created);
        return created;
      });
      return manager;
    };
    mcpState.set(app, { ensure, current: () => manager });
    const statuses = (): McpServerStatus[] =>
      managers.get(app)?.status() ??
      Object.entries(servers()).map(([name, server]) => ({
        name,
        transport: server.command ? ("stdio" as const) : ("http" as const),
        state: server.enabled ? ("starting" as const) : ("disabled" as const),
        tools: 0,
        listed: 0,
        restarts: 0,
        lastError: null,
      }));
    return {
      commands: [skillsCommand(catalog), mcpCommand(statuses)],
      hooks: [
        {
          recall: async ({ role }) =>
            role === "guest" && !guestsMayRead() ? null : skillsPrompt((await catalog.list()).available),
        },
      ],
    };
  },
  start(config, app) {
    const state = mcpState.get(app);
    if (!state) return;
    return {
      // After ready and not awaited: start-up waits neither for the SDK to load nor for any server.
      ...(anyEnabled(config)
        ? {
            afterReady: async () => {
              await state
                .ensure()
                .catch((error: unknown) => app.logger.error({ err: error }, "mcp-start-failed"));
            },
          }
        : {}),
      stop: async () => {
        const manager = await state.current()?.catch(() => null);
        await manager?.stop();
      },
    };
  },
  /**
   * `mcpServers` reloaded: new servers start, removed or disabled ones stop (their tools leave the registry), changed
   * ones restart; the SDK loads with the first server ever enabled.
   */
  async reload(config, app, change) {
    if (!change.touches("mcpServers")) return;
    const state = mcpState.get(app);
    if (!state) return;
    redactHeaders(config, app);
    const running = state.current();
    if (!running && !anyEnabled(config)) return;
    const manager = await (running ?? state.ensure());
    if (!running) {
      app.logger.info({ started: Object.keys(config.mcpServers) }, "mcp-reloaded");
      return;
    }
    const result = await manager.reload(config.mcpServers);
    app.logger.info(result, "mcp-reloaded");
  },
};

function anyEnabled(config: MagpieConfig): boolean {
  return Object.values(config.mcpServers).some((server) => server.enabled);
}

function redactHeaders(config: MagpieConfig, app: AppContext): void {
  for (const server of Object.values(config.mcpServers))
    app.services.redactor.add(...Object.values(server.headers).filter((value) => value.length >= 8));
}

const mcpState = new WeakMap<
  AppContext,
  { ensure(): Promise<McpManager>; current(): Promise<McpManager> | null }
>();
const managers = new WeakMap<AppContext, McpManager>();

/** The app's MCP manager once started (null before, or with no enabled server). */
export function mcpManager(app: AppContext): McpManager | null {
  return managers.get(app) ?? null;
}
