import type { AgentProfile } from "./agents.js";

export interface SystemPromptInput {
  agent: AgentProfile;
  /** Extra text from `agent.systemPrompt` in config. */
  globalPrompt?: string;
  timezone: string;
  now: Date;
  channel: string;
  isDirect: boolean;
  summary: string | null;
  recalled: string[];
  toolNames: string[];
}

const clockFormats = new Map<string, Intl.DateTimeFormat>();

/** "Tuesday 24 November 2026 at 20:15" in `timezone` (formatters are costly to build: one per zone). */
export function clockLine(timezone: string, now: Date): string {
  let format = clockFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-GB", { timeZone: timezone, dateStyle: "full", timeStyle: "short" });
    clockFormats.set(timezone, format);
  }
  return format.format(now);
}

/** Builds the system prompt of a turn: identity, time, agent prompt, recalled memory, summary of earlier turns. */
export function buildSystemPrompt(input: SystemPromptInput): string {
  const time = clockLine(input.timezone, input.now);
  const parts = [
    "You are Magpie, a self-hosted assistant running on the owner's own always-on machine. You answer chat " +
      "messages, use tools on that machine when they help, and keep answers short and concrete. Use Markdown " +
      "sparingly (it is rendered for the chat platform).",
    `Current time: ${time} (${input.timezone}). Channel: ${input.channel} (${input.isDirect ? "direct message" : "group chat"}).`,
  ];
  if (input.toolNames.length > 0) {
    parts.push(
      "When a tool fails, read its error code and message, fix the call or explain the problem; don't invent results.",
    );
  }
  if (input.agent.systemPrompt) parts.push(input.agent.systemPrompt);
  if (input.globalPrompt) parts.push(input.globalPrompt);
  for (const text of input.recalled) parts.push(text);
  if (input.summary) parts.push(`Summary of the earlier conversation in this chat:\n${input.summary}`);
  return parts.join("\n\n");
}
