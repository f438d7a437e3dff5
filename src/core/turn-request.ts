import type { ToolSetConfig } from "../config/sections/agents.js";
import type { TurnJournal } from "./agent-loop.js";
import type { AgentProfile } from "./agents.js";
import type { SenderIdentity, TurnOrigin } from "./identity.js";
import type { ImagePart } from "./media.js";
import type { BudgetScope } from "./spend.js";
import type { Approver } from "./tool-runtime.js";
import type { TurnApprovals } from "./turn-approvals.js";
import type { ProvenanceSeed } from "./turn-provenance.js";
import type { TurnSlot } from "./turn-slots.js";
import type { ReplyTarget } from "./types.js";

/**
 * Everything the turn engine needs to run one turn of any kind — a user's message, a scheduled prompt, a spawned
 * subagent, a delegated agent, an event — so there is exactly one path for all of them.
 */
export interface TurnRequest {
  origin: TurnOrigin;
  /** The inbox messages the turn answers (a chat turn's): named in its turn events, for `magpie trace`. */
  inboxIds?: number[];
  /** The session the turn acts in: tool calls are audited under it and tools' per-session state lives there. */
  sessionKey: string;
  /** Where history is loaded from and kept (default: `sessionKey`). A delegated turn keeps its own. */
  historyKey?: string;
  agent: AgentProfile;
  /** The model to ask instead of the agent's (a chat's `/model` choice). */
  model?: string;
  /** Whose authority the turn carries. */
  sender: SenderIdentity;
  /** Where replies and `message` default to. */
  target: ReplyTarget;
  /** The user's text, the job's prompt, the subagent's task, the event's note. */
  text: string;
  /** Photos sent with the text, for a vision model (this turn only). */
  images?: ImagePart[];
  /** For the system prompt: which platform, DM or group. */
  channel: string;
  isDirect: boolean;
  /** Delegation depth: 0 for a turn nobody delegated. */
  depth: number;
  /** An owner is there to ask (approvals, questions, Warn verdicts). */
  canAsk: boolean;
  approver?: Approver;
  /** Tool set instead of the agent's (a subagent's `subagent` set, a job's `toolSet`). */
  toolSet?: ToolSetConfig | string;
  /** An upper bound on tool names, whatever the sets say (a job's creator's set). */
  toolLimit?: readonly string[];
  maxIterations?: number;
  /**
   * The budgets the turn counts against when something else caused it (a delegation, a spawn, a follow-up turn)
   * or it runs again (after a restart). Default: a new turn of `sessionKey`.
   */
  budget?: BudgetScope;
  /** The approvals memory of the turn this one works for (a delegation, a subagent); default: a new one. */
  turnApprovals?: TurnApprovals;
  /** Untrusted content the turn starts with, the owner's own words, a job's `allowAfterUntrusted` (the rule of two). */
  untrusted?: ProvenanceSeed;
  signal: AbortSignal;
  onTextDelta?: (delta: string) => void;
  /** What the turn is doing now ("waiting for the model", "running web_fetch"), for its progress note. */
  onActivity?: (activity: string) => void;
  /** A slot the caller already holds (a delegated turn runs inside its parent's); else the engine takes one. */
  slot?: TurnSlot;
  /**
   * Called once the turn holds its slot, before anything runs: a chat turn marks its messages started only
   * then, so a crash while it waited for a slot leaves them to be answered, not reported interrupted.
   */
  onStart?: () => void;
  /** The turn's step journal (a chat turn's; DESIGN.md → Durable turns): it writes its steps there, and resumes after those of a cut-off run. */
  journal?: TurnJournal;
}
