import { z } from "zod";
import { ComposioClient } from "../composio/composio-client.js";
import { defineTool, ToolError } from "./define-tool.js";
import { requireHighRisk } from "./hardware-support.js";
import { refuseOutboundLeak } from "./outbound-check.js";
import { safeHttpOf } from "./web/safe-http-of.js";

/** Composio tool slugs and ids: letters, digits, _ and -; never a path or URL. */
const slug = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/, "letters, digits, _ and - only (e.g. GITHUB_STAR_A_REPOSITORY)");

const inputSchema = z.object({
  action: z
    .enum(["list", "execute", "connect"])
    .describe(
      "list: the apps (toolkits), or app's tools. execute: run tool_slug with params. connect: start connecting an account through auth_config_id; returns a URL for the owner to open.",
    ),
  app: slug.optional().describe("list: a toolkit slug, e.g. github, gmail."),
  tool_slug: slug
    .optional()
    .describe("execute: the tool, e.g. GITHUB_STAR_A_REPOSITORY_FOR_THE_AUTHENTICATED_USER."),
  action_name: slug.optional().describe("execute: the v2 name of the tool (same as tool_slug)."),
  params: z.record(z.string(), z.unknown()).optional().describe("execute: the tool's arguments."),
  entity_id: slug.optional().describe("The Composio user (entity) id; default 'default'."),
  auth_config_id: slug.optional().describe("connect: the auth config to connect through."),
  connected_account_id: slug.optional().describe("execute: a specific connected account."),
});

export const composioTool = defineTool({
  name: "composio",
  description:
    "Use apps (GitHub, Gmail, Slack, Notion …) through Composio: list apps or an app's tools, execute a tool with params, or connect an account (returns a link for the owner). execute and connect count as high risk.",
  inputSchema,
  risk: "medium",
  isEnabled: (config) => Boolean(config.composio.apiKey),
  async execute(input, context) {
    const { apiKey, baseUrl } = context.config.composio;
    if (!apiKey)
      throw new ToolError(
        "composio.not_configured",
        "Composio is not set up (COMPOSIO_API_KEY or composio.apiKey).",
      );
    const client = new ComposioClient({ apiKey, baseUrl, http: safeHttpOf(context) });
    const entityId = input.entity_id ?? "default";
    const approvals = context.config.security.approvals.require;
    // execute and connect act on the owner's accounts: asked as risk:high unless the call already was.
    const askHigh = async (action: string) => {
      if (!approvals.includes("composio") && !approvals.includes("risk:medium"))
        await requireHighRisk(context, action);
    };
    switch (input.action) {
      case "list": {
        const { api, items } = await client.list(input.app);
        return { ok: true, api, ...(input.app ? { app: input.app, tools: items } : { apps: items }) };
      }
      case "execute": {
        refuseOutboundLeak(context, [{ kind: "body", value: JSON.stringify(input.params ?? {}) }]);
        const toolSlug = input.tool_slug ?? input.action_name;
        if (!toolSlug)
          throw new ToolError("composio.tool_required", "action 'execute' needs tool_slug (or action_name).");
        await askHigh(`composio execute ${toolSlug} for ${entityId}`);
        const { api, result } = await client.execute({
          slug: toolSlug,
          params: input.params ?? {},
          entityId,
          ...(input.connected_account_id ? { connectedAccountId: input.connected_account_id } : {}),
        });
        return { ok: true, api, tool: toolSlug, result: result as Record<string, unknown> };
      }
      case "connect": {
        if (!input.auth_config_id)
          throw new ToolError("composio.auth_config_required", "action 'connect' needs auth_config_id.");
        await askHigh(`composio connect ${input.auth_config_id} for ${entityId}`);
        const connection = await client.connect(input.auth_config_id, entityId);
        return {
          ok: true,
          ...connection,
          ...(connection.redirectUrl ? { next: "Send the owner redirectUrl to finish connecting." } : {}),
        };
      }
    }
  },
});
