import { z } from "zod";
import { positiveInt } from "./common.js";

/** `browser`: the headless system Chromium behind the `browser` tool, and `browser_open`'s allowed domains. */
export const browserSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    /** Default: the first of chromium, chromium-browser, google-chrome on the PATH (never downloaded). */
    executablePath: z.string().min(1).optional(),
    /** A session's page is closed after this long unused; the browser process once no page is left. */
    idleSecs: positiveInt.default(300),
    /** Hosts (and their subdomains) `browser_open` may open on the desktop; empty: none (the tool is off). */
    allowedDomains: z
      .array(
        z
          .string()
          .regex(/^[a-z0-9-]+(\.[a-z0-9-]+)*$/i, "a host name like github.com (no scheme, port or path)"),
      )
      .default([]),
  })
  .prefault({});

/** `screenshot`: the host screen capture tool. */
export const screenshotSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
  })
  .prefault({});

/** `composio`: Composio's hosted tool API (v3, falling back to v2). */
export const composioSchema = z
  .strictObject({
    apiKey: z.string().min(1).optional(),
    baseUrl: z.string().url().default("https://backend.composio.dev"),
  })
  .prefault({});

export type BrowserConfig = z.infer<typeof browserSchema>;
export type ComposioConfig = z.infer<typeof composioSchema>;
