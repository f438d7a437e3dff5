import { mcpCommand } from "../mcp/mcp-command.js";
import type { McpManager } from "../mcp/mcp-manager.js";
import type { McpServerStatus } from "../mcp/mcp-status.js";
import { scopeOf } from "../security/path-resolver.js";
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
  setup(app) {
    const logger = app.logger.child({ component: "skills" });
    const catalog = new SkillCatalog({
      dirs: skillDirs(app.config.workspace, app.config.skills.dirs),
      // Skills are read as the file tools read: the same scope, level and Magpie-state list.
      guard: { scope: () => scopeOf(app.config), level: () => app.config.security.level },
      onProblem: (problem) => logger.warn(problem, "skill-invalid"),
      onRefused: (refusal) => logger.warn(refusal, "skill-refused"),
    });
    app.services.skills = catalog;
    const guestsMayRead = app.tools.resolveToolSet(app.config.security.guestToolSet).includes("invoke_skill");
    app.addHooks({
      recall: async ({ role }) =>
        role === "guest" && !guestsMayRead ? null : skillsPrompt((await catalog.list()).available),
    });
    app.commands.register(skillsCommand(catalog));

    let statuses: () => McpServerStatus[] = () => [];
    const servers = app.config.mcpServers;
    // Header values and env values are secrets more often than not: redacted from logs, results and requests.
    for (const server of Object.values(servers))
      app.redactor.add(...Object.values(server.headers).filter((value) => value.length >= 8));
    if (Object.values(servers).some((server) => server.enabled)) {
      let manager: McpManager | null = null;
      statuses = () =>
        manager?.status() ??
        Object.entries(servers).map(([name, server]) => ({
          name,
          transport: server.command ? ("stdio" as const) : ("http" as const),
          state: server.enabled ? ("starting" as const) : ("disabled" as const),
          tools: 0,
          listed: 0,
          restarts: 0,
          lastError: null,
        }));
      mcpState.set(app, {
        start: async () => {
          const { McpManager } = await import("../mcp/mcp-manager.js");
          manager = new McpManager({
            servers,
            tools: app.tools,
            logger: app.logger.child({ component: "mcp" }),
            workspace: app.config.workspace,
            backoffMs: mcpTiming.backoffMs,
          });
          manager.start();
          managers.set(app, manager);
          return manager;
        },
      });
    }
    app.commands.register(mcpCommand(() => statuses()));
  },
  start(app) {
    const state = mcpState.get(app);
    if (!state) return;
    // After ready and not awaited: start-up waits neither for the SDK to load nor for any server.
    let starting: Promise<McpManager | null> = Promise.resolve(null);
    app.afterReady(() => {
      starting = state.start().catch((error) => {
        app.logger.error({ err: error }, "mcp-start-failed");
        return null;
      });
    });
    app.onStop(async () => {
      const manager = await starting;
      await manager?.stop();
    });
  },
};

const mcpState = new WeakMap<AppContext, { start(): Promise<McpManager> }>();
const managers = new WeakMap<AppContext, McpManager>();

/** The app's MCP manager once started (null before, or with no enabled server). */
export function mcpManager(app: AppContext): McpManager | null {
  return managers.get(app) ?? null;
}
