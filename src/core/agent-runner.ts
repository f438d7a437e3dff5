import type { IsolatedRunInput, IsolatedRunResult } from "./router.js";

/** Runs an agent turn outside any chat session (scheduled prompts, delegation). */
export interface AgentRunner {
  /** `agent` names a configured agent (default: the default agent). */
  run(input: IsolatedRunInput & { agent?: string }): Promise<IsolatedRunResult>;
}
