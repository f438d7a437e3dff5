import { z } from "zod";
import { agentLimitsSchema, agentsSchema, routesSchema } from "./sections/agents.js";
import { browserSchema, composioSchema, screenshotSchema } from "./sections/browser.js";
import { channelsSchema } from "./sections/channels.js";
import { deliverySchema } from "./sections/delivery.js";
import { mcpServersSchema, skillsSchema } from "./sections/mcp.js";
import { retentionSchema } from "./sections/retention.js";
import { securitySchema } from "./sections/security.js";
import {
  budgetsSchema,
  cronSchema,
  hardwareSchema,
  httpSchema,
  llmSchema,
  notifySchema,
} from "./sections/services.js";
import { toolsSchema } from "./sections/tools.js";
import { mqttSchema, triggersSchema } from "./sections/triggers.js";
import { voiceSchema } from "./sections/voice.js";

/** The whole configuration. Unknown keys are errors: a typo must not silently disable a guard. */
export const configSchema = z.strictObject({
  dataDir: z.string().min(1).default("./data"),
  /** Defaults to `<dataDir>/workspace`. */
  workspace: z.string().min(1).optional(),
  timezone: z.string().min(1).optional(),
  http: httpSchema,
  llm: llmSchema,
  budgets: budgetsSchema,
  agent: agentLimitsSchema,
  delivery: deliverySchema,
  agents: agentsSchema.optional(),
  routes: routesSchema,
  channels: channelsSchema,
  tools: toolsSchema,
  security: securitySchema,
  notify: notifySchema,
  hardware: hardwareSchema,
  mcpServers: mcpServersSchema,
  skills: skillsSchema,
  cron: cronSchema,
  retention: retentionSchema,
  browser: browserSchema,
  screenshot: screenshotSchema,
  composio: composioSchema,
  triggers: triggersSchema,
  mqtt: mqttSchema,
  voice: voiceSchema,
});

export type ConfigInput = z.input<typeof configSchema>;
type ParsedConfig = z.infer<typeof configSchema>;

/** The validated configuration with paths made absolute and defaults resolved. */
export type MagpieConfig = Omit<ParsedConfig, "workspace" | "timezone"> & {
  workspace: string;
  timezone: string;
  /** Where the config was read from, or null in env-only mode. */
  sourcePath: string | null;
  /** The `.env` files that were loaded (absolute paths): Magpie's state, hidden from the agent. */
  envFiles: string[];
};
