/** Extension points of the agent turn (memory recall, conversation memory). */
export interface AgentHooks {
  /** Text added to the system prompt before a turn (e.g. recalled memories); null for nothing. */
  recall?(input: { sessionKey: string; agent: string; text: string }): Promise<string | null>;
  /** Called after history was compacted into `summary`. */
  onCompacted?(input: { sessionKey: string; agent: string; summary: string }): Promise<void>;
}
