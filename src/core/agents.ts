import type { AgentConfig, RouteConfig, ToolSetConfig } from "../config/sections/agents.js";
import type { InboundMessage } from "./types.js";

/** A named agent, resolved from config. */
export interface AgentProfile {
  name: string;
  systemPrompt?: string;
  model: string;
  toolSet: ToolSetConfig;
  /** Agents it may delegate to even when their tool set is wider than its own (`agents.<name>.delegates`). */
  delegates?: string[];
}

/**
 * Named agents and the routes that bind chats to them (first matching route wins). A reload `replace`s both: the
 * next message is routed by the new routes; a turn already running keeps the profile it started with.
 */
export class AgentDirectory {
  private profiles = new Map<string, AgentProfile>();
  private routes: RouteConfig[] = [];
  private defaultName = "main";

  constructor(agents: Record<string, AgentConfig> | undefined, routes: RouteConfig[], defaultModel: string) {
    this.replace(agents, routes, defaultModel);
  }

  /** The agent a message gets when no route matches: `main` if it exists, else the first one. */
  get defaultAgent(): string {
    return this.defaultName;
  }

  /** Takes over a new `agents` and `routes` (a config reload). */
  replace(
    agents: Record<string, AgentConfig> | undefined,
    routes: RouteConfig[],
    defaultModel: string,
  ): void {
    const entries = Object.entries(agents ?? {});
    if (entries.length === 0) entries.push(["main", { toolSet: "full" }]);
    const profiles = new Map<string, AgentProfile>();
    for (const [name, agent] of entries) {
      profiles.set(name, {
        name,
        systemPrompt: agent.systemPrompt,
        model: agent.model ?? defaultModel,
        toolSet: agent.toolSet ?? "default",
        delegates: agent.delegates ?? [],
      });
    }
    this.profiles = profiles;
    this.routes = routes;
    this.defaultName = profiles.has("main") ? "main" : entries[0]![0];
  }

  get(name: string): AgentProfile | undefined {
    return this.profiles.get(name);
  }

  names(): string[] {
    return [...this.profiles.keys()];
  }

  /** The agent bound to a message by `routes`, else the default agent. */
  forMessage(message: Pick<InboundMessage, "channel" | "chatId" | "userId">): AgentProfile {
    for (const route of this.routes) {
      const { channel, chatId, userId } = route.match;
      if (channel !== undefined && channel !== message.channel) continue;
      if (chatId !== undefined && chatId !== message.chatId) continue;
      if (userId !== undefined && userId !== message.userId) continue;
      const profile = this.profiles.get(route.agent);
      if (profile) return profile;
    }
    return this.profiles.get(this.defaultAgent)!;
  }
}
