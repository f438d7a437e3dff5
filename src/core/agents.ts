import type { AgentConfig, RouteConfig, ToolSetConfig } from "../config/sections/agents.js";
import type { InboundMessage } from "./types.js";

/** A named agent, resolved from config. */
export interface AgentProfile {
  name: string;
  systemPrompt?: string;
  model: string;
  toolSet: ToolSetConfig;
}

/** Named agents and the routes that bind chats to them (first matching route wins). */
export class AgentDirectory {
  private readonly profiles = new Map<string, AgentProfile>();
  readonly defaultAgent: string;

  constructor(
    agents: Record<string, AgentConfig> | undefined,
    private readonly routes: RouteConfig[],
    defaultModel: string,
  ) {
    const entries = Object.entries(agents ?? {});
    if (entries.length === 0) entries.push(["main", { toolSet: "full" }]);
    for (const [name, agent] of entries) {
      this.profiles.set(name, {
        name,
        systemPrompt: agent.systemPrompt,
        model: agent.model ?? defaultModel,
        toolSet: agent.toolSet ?? "default",
      });
    }
    this.defaultAgent = this.profiles.has("main") ? "main" : entries[0]![0];
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
