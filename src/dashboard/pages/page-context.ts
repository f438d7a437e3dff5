import type { Context } from "hono";
import type { Clock } from "../../core/clock.js";
import type { ChannelAdapter } from "../../core/types.js";
import type { HttpApp } from "../../http/server.js";
import type { MemoryService } from "../../memory/memory-service.js";
import type { Scheduler } from "../../scheduler/scheduler.js";
import type { ChatApprovalGate } from "../../security/approval-gate.js";
import type { QuestionGate } from "../../security/question-gate.js";
import type { SandboxStatus } from "../../security/sandbox.js";
import type { Store } from "../../store/index.js";
import type { Budgets } from "../../usage/budget-periods.js";
import { layout, type PageBody } from "../layout.js";
import type { ModelChainConfig } from "./home-model.js";

/** What the pages read and steer. */
export interface DashboardDeps {
  token: string;
  store: Store;
  timezone: string;
  channels: () => ReadonlyMap<string, ChannelAdapter>;
  approvals: () => ChatApprovalGate | undefined;
  questions: () => QuestionGate | undefined;
  scheduler: () => Scheduler | undefined;
  memory: () => MemoryService | undefined;
  /** The agent whose memories the memory page opens on. */
  defaultAgent: () => string;
  /** The app's clock: "3 min ago" is counted from it. */
  clock: Clock;
  /** The app's id on the core event stream (the home page follows the model chain's calls there). */
  appId: string;
  /** When this Magpie started (the home page's uptime). */
  startedAt: number;
  /** The model chain as configured now (null without an LLM). */
  modelChain: () => ModelChainConfig | null;
  /** The shell sandbox's state, as `/status` and `magpie doctor` tell it. */
  sandbox: () => Promise<SandboxStatus>;
  /** The spending caps as configured now. */
  budgets: () => Budgets;
}

/** Registers one page's routes. */
export type PageRoutes = (app: HttpApp, deps: DashboardDeps) => void;

/**
 * htmx asks for the live part only (always 200: htmx doesn't swap an error answer, and the part says what went
 * wrong); a plain request or a form post without JavaScript gets the whole page and the real status.
 */
export function respond(
  c: Context,
  title: string,
  part: PageBody,
  status: 200 | 404 | 409 = 200,
): Response | Promise<Response> {
  if (c.req.header("hx-request")) return c.html(part);
  return c.html(layout(title, part, c.req.path), status);
}
