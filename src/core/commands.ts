import type { SenderIdentity } from "./identity.js";
import type { InboundMessage, OutboundMessage, ReplyTarget } from "./types.js";

/**
 * Commands only an owner may run (DESIGN.md → Security → Identities and authority). `/help` and `/status` are
 * open to anyone allowed to write; a command may also declare itself `ownerOnly`.
 */
export const OWNER_ONLY_COMMANDS: ReadonlySet<string> = new Set([
  "memory",
  "remember",
  "forget",
  "cron",
  "pair",
  "approve",
  "deny",
  "tasks",
  "reset",
  "stop",
  "model",
  "usage",
  "mcp",
  "skills",
]);

export interface CommandContext {
  message: InboundMessage;
  /** Who sent the command, with their role on this channel. */
  sender: SenderIdentity;
  sessionKey: string;
  /** Text after the command name, trimmed. */
  args: string;
  target: ReplyTarget;
}

/** A deterministic slash command: works without an LLM. */
export interface SlashCommand {
  name: string;
  description: string;
  usage?: string;
  /** Refused to guests (in addition to OWNER_ONLY_COMMANDS). */
  ownerOnly?: boolean;
  run(context: CommandContext): Promise<string | OutboundMessage> | string | OutboundMessage;
}

/** Parses `/name args` (also `/name@botname args`); null for ordinary text. */
export function parseCommand(text: string): { name: string; args: string } | null {
  const match = /^\/([a-zA-Z][\w-]*)(?:@\S+)?(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  return { name: match[1]!.toLowerCase(), args: (match[2] ?? "").trim() };
}

/** Registry of slash commands; features register theirs at setup. */
export class CommandRegistry {
  private readonly commands = new Map<string, SlashCommand>();

  register(...commands: SlashCommand[]): this {
    for (const command of commands) {
      if (this.commands.has(command.name)) throw new Error(`Command "/${command.name}" is registered twice.`);
      this.commands.set(command.name, command);
    }
    return this;
  }

  get(name: string): SlashCommand | undefined {
    return this.commands.get(name);
  }

  /** True when only an owner may run `/name`. */
  isOwnerOnly(name: string): boolean {
    return OWNER_ONLY_COMMANDS.has(name) || this.commands.get(name)?.ownerOnly === true;
  }

  list(): SlashCommand[] {
    return [...this.commands.values()];
  }
}
