import { z } from "zod";
import { re2Pattern } from "../../lib/re2-pattern.js";
import { positiveInt } from "./common.js";

/** A pattern the shell policy can run on a command in linear time (RE2), or the config error naming why not. */
const re2PatternSchema = z
  .string()
  .min(1)
  .superRefine((pattern, context) => {
    const compiled = re2Pattern(pattern);
    if (typeof compiled === "string")
      context.addIssue({ code: "custom", message: `not a valid regular expression: ${compiled}` });
  });

export const toolsSchema = z
  .strictObject({
    files: z
      .strictObject({
        /** Extra directories that count as inside the workspace. */
        allowedPaths: z.array(z.string().min(1)).default([]),
        maxFileSizeBytes: positiveInt.default(10 * 1024 * 1024),
      })
      .prefault({}),
    shell: z
      .strictObject({
        timeoutSecs: positiveInt.default(60),
        /** bubblewrap sandbox for shell, git and command jobs: auto (use it when the probe works), bwrap (required), off. */
        sandbox: z.enum(["auto", "bwrap", "off"]).default("auto"),
        /** Network access inside the sandbox. */
        network: z.boolean().default(true),
        maxOutputBytes: positiveInt.default(1024 * 1024),
        /** When set, only these executables (first word of the command) may run. */
        allowCommands: z.array(z.string().min(1)).optional(),
        /** Regular expressions (RE2 syntax); a command matching any is refused. */
        denyPatterns: z.array(re2PatternSchema).default([]),
      })
      .prefault({}),
    http: z
      .strictObject({
        enabled: z.boolean().default(false),
        allowedDomains: z.array(z.string().min(1)).optional(),
        maxResponseBytes: positiveInt.default(1024 * 1024),
        timeoutMs: positiveInt.default(30_000),
      })
      .prefault({}),
    web: z
      .strictObject({
        allowedDomains: z.array(z.string().min(1)).optional(),
        maxChars: positiveInt.default(50_000),
        braveApiKey: z.string().min(1).optional(),
        /** Where web_search sends its queries (a self-hosted mirror or proxy; tests point them at a fake). */
        braveBaseUrl: z.url({ protocol: /^https?$/ }).default("https://api.search.brave.com"),
        duckDuckGoBaseUrl: z.url({ protocol: /^https?$/ }).default("https://html.duckduckgo.com"),
      })
      .prefault({}),
    /** Tool outputs longer than this are spilled to data/spill/ and the model gets a head/tail and a handle. */
    spillThresholdChars: positiveInt.default(16_000),
  })
  .prefault({});

export type ToolsConfig = z.infer<typeof toolsSchema>;
