import { z } from "zod";
import { unpinnedPackage } from "../package-pin.js";
import { positiveInt } from "./common.js";

const serverName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]+$/, "MCP server names are letters, digits, '-' and '_'")
  .refine(
    (name) => !name.includes("__"),
    "MCP server names may not contain '__' (it separates mcp__<server>__<tool>)",
  );

const toolFilterSchema = z
  .strictObject({
    /** Only these tools (the server's names, or `mcp__<server>__<tool>`) are offered. */
    allow: z.array(z.string().min(1)).optional(),
    /** These tools are never offered. */
    deny: z.array(z.string().min(1)).default([]),
  })
  .prefault({});

/** One MCP server: stdio when `command` is set, streamable HTTP when `url` is set. */
export const mcpServerSchema = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).default([]),
    /** The stdio server's whole environment, with the SDK's safe defaults (PATH, HOME, USER …). */
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().min(1).optional(),
    url: z.string().url().optional(),
    headers: z.record(z.string(), z.string()).default({}),
    enabled: z.boolean().default(true),
    /** Per tool call. */
    timeoutSecs: positiveInt.default(60),
    tools: toolFilterSchema,
    /** Its results count as the owner's own content (DESIGN.md → Security → "Untrusted content"); default untrusted. */
    trusted: z.boolean().default(false),
  })
  .superRefine((server, context) => {
    if (Boolean(server.command) === Boolean(server.url)) {
      context.addIssue({
        code: "custom",
        message: "set either command (a stdio server) or url (a streamable HTTP server), not both or neither",
      });
    }
    if (server.url) {
      for (const key of ["args", "env", "cwd"] as const) {
        const value = server[key];
        if (key === "cwd" ? value !== undefined : Object.keys(value ?? {}).length > 0)
          context.addIssue({
            code: "custom",
            path: [key],
            message: `${key} applies to stdio servers (command) only`,
          });
      }
    }
    // Pinned supply chain: a launcher that fetches a package at start must name one exact version.
    const unpinned = server.command ? unpinnedPackage(server.command, server.args) : null;
    if (unpinned) context.addIssue({ code: "custom", path: ["args"], message: unpinned });
    if (server.command && Object.keys(server.headers).length > 0)
      context.addIssue({
        code: "custom",
        path: ["headers"],
        message: "headers apply to HTTP servers (url) only",
      });
  });

export const mcpServersSchema = z.record(serverName, mcpServerSchema).default({});

/** Skills: `SKILL.md` folders under `<workspace>/skills/` and these directories. */
export const skillsSchema = z
  .strictObject({
    dirs: z.array(z.string().min(1)).default([]),
    /**
     * Only skills whose content an owner approved (`magpie skills approve <name>`, `/skills approve <name>`) load;
     * a new or changed skill is listed as not loaded until approved.
     */
    requireApproval: z.boolean().default(false),
  })
  .prefault({});

export type McpServerConfig = z.infer<typeof mcpServerSchema>;
