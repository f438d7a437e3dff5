import type { Role } from "./identity.js";

/** Extension points of the agent turn (memory recall, conversation memory). */
export interface AgentHooks {
  /**
   * Text added to the system prompt before a turn (e.g. recalled memories); null for nothing. `role` is the
   * sender's: a guest's turn must recall none of the owners' memories.
   */
  recall?(input: { sessionKey: string; agent: string; text: string; role: Role }): Promise<string | null>;
  /** Called after history was compacted into `summary`; `role` is who the session's turns ran for. */
  onCompacted?(input: { sessionKey: string; agent: string; summary: string; role: Role }): Promise<void>;
}
