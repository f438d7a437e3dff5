import { z } from "zod";
import { idSchema, positiveInt } from "./common.js";

export const toolSetSchema = z.union([z.enum(["default", "full", "subagent"]), z.array(z.string().min(1))]);

export const agentSchema = z.strictObject({
  systemPrompt: z.string().optional(),
  model: z.string().min(1).optional(),
  toolSet: toolSetSchema.optional(),
  /**
   * Agents this one may `delegate` to although their tool set is wider than its own (DESIGN.md → Delegation). The
   * delegated turn still never exceeds the caller's authority: a guest's set, a job creator's set.
   */
  delegates: z.array(z.string().min(1)).optional(),
});

export const agentsSchema = z
  .record(
    z.string().regex(/^[a-z][a-z0-9_-]*$/, "agent names are lower-case letters, digits, '-' and '_'"),
    agentSchema,
  )
  .superRefine((agents, context) => {
    const names = Object.keys(agents);
    for (const [name, agent] of Object.entries(agents)) {
      agent.delegates?.forEach((delegate, index) => {
        if (names.includes(delegate)) return;
        context.addIssue({
          code: "custom",
          path: [name, "delegates", index],
          message: `unknown agent "${delegate}" — define it under agents: or use one of ${names.join(", ")}`,
        });
      });
    }
  });

export const routesSchema = z
  .array(
    z.strictObject({
      match: z.strictObject({
        channel: z.string().min(1).optional(),
        chatId: idSchema.optional(),
        userId: idSchema.optional(),
      }),
      agent: z.string().min(1),
    }),
  )
  .default([]);

export const agentLimitsSchema = z
  .strictObject({
    maxIterations: positiveInt.default(20),
    maxConcurrentTurns: positiveInt.default(4),
    /** An inbound text over this many characters is cut; the rest goes to a workspace file the model is told about. */
    maxInboundChars: positiveInt.default(100_000),
    /** History beyond this many (estimated) tokens is compacted by summarization. */
    historyTokens: positiveInt.default(12_000),
    /** Extra text appended to every agent's system prompt. */
    systemPrompt: z.string().optional(),
    /** Stream replies as an edited draft on channels that can edit messages. */
    streaming: z.boolean().default(true),
    /**
     * A chat turn still running after this many seconds sends one short "still working — <what is running>" note
     * (edited in place where the channel can edit); 0 turns it off.
     */
    progressNoticeSecs: z.number().min(0).default(60),
    /**
     * A chat turn whose every model fails for a reason that passes (connection, timeout, 429, 5xx) waits this long
     * for them — one notice, retried with back-off — before it fails; 0 fails it at once.
     */
    retryOutageForSecs: z.number().min(0).default(1800),
    /**
     * A turn cut off by a crash or restart resumes from its step journal when its first step is at most this many
     * seconds old (DESIGN.md → Durable turns); an older one is reported "interrupted", naming what it had done.
     */
    resumeWithinSecs: z.number().min(0).default(3600),
    /** Nested `delegate` calls that may run (a turn nobody delegated is depth 0); 0 turns delegation off. */
    maxDelegationDepth: z.number().int().min(0).default(3),
    /** Background subagents (`spawn`) running at once; more are refused until one ends. 0 turns spawn off. */
    maxSubagents: z.number().int().min(0).default(2),
    /** A subagent still running after this many seconds is stopped and reported as timed out. */
    subagentTimeoutSecs: z.number().positive().default(600),
    /** LLM ⇄ tool rounds a subagent may take. */
    subagentMaxIterations: positiveInt.default(15),
    /** Automatic memory recall before each turn (src/memory). */
    recall: z
      .strictObject({
        /** Relevant memories recalled for the user's message. */
        limit: z.number().int().min(0).max(50).default(5),
        /** Token budget (≈ chars/4) of the whole recalled-memory section, core memories included. */
        maxTokens: z.number().int().min(0).default(600),
        /** Part of `maxTokens` always given to core memories about the owner. */
        coreTokens: z.number().int().min(0).default(200),
      })
      .prefault({}),
  })
  .prefault({});

export type AgentConfig = z.infer<typeof agentSchema>;
export type ToolSetConfig = z.infer<typeof toolSetSchema>;
export type RouteConfig = z.infer<typeof routesSchema>[number];
