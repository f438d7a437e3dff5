import { z } from "zod";
import { positiveInt } from "./common.js";

function isValidRegex(pattern: string): boolean {
  try {
    // regex-dynamic: compiled only to check its syntax, never run here
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

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
        /** Regular expressions; a command matching any is refused. */
        denyPatterns: z
          .array(
            z
              .string()
              .min(1)
              .refine(isValidRegex, { message: "not a valid regular expression (JavaScript syntax)" }),
          )
          .default([]),
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
