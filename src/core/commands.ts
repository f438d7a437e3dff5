import type { InboundMessage, OutboundMessage, ReplyTarget } from "./types.js";

export interface CommandContext {
  message: InboundMessage;
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

  list(): SlashCommand[] {
    return [...this.commands.values()];
  }
}
