import { z } from "zod";
import { positiveInt } from "./common.js";

export const httpSchema = z
  .strictObject({
    host: z.string().min(1).default("127.0.0.1"),
    port: z.number().int().min(0).max(65535).default(8787),
  })
  .prefault({});

export const llmSchema = z
  .strictObject({
    baseUrl: z.string().url().optional(),
    apiKey: z.string().min(1).optional(),
    model: z.string().min(1).default("gpt-4o-mini"),
    embeddingModel: z.string().min(1).optional(),
    timeoutMs: positiveInt.default(60_000),
    maxRetries: z.number().int().min(0).max(10).default(2),
  })
  .prefault({});

export const notifySchema = z
  .strictObject({
    pushover: z
      .strictObject({
        token: z.string().min(1).optional(),
        user: z.string().min(1).optional(),
        /** HTTP proxy as http://host:port. */
        proxy: z.string().url().optional(),
      })
      .prefault({}),
  })
  .prefault({});

export const hardwareSchema = z
  .strictObject({
    boards: z
      .array(
        z.strictObject({
          name: z.string().min(1),
          type: z.string().min(1).default("generic"),
          gpioChip: z.string().optional(),
          serialPorts: z.array(z.string()).default([]),
          i2cBuses: z.array(z.number().int().min(0)).default([]),
          spiDevices: z.array(z.string()).default([]),
        }),
      )
      .default([]),
  })
  .prefault({});

export const mcpServersSchema = z
  .record(
    z.string().regex(/^[a-zA-Z0-9_-]+$/, "MCP server names are letters, digits, '-' and '_'"),
    z.strictObject({
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      env: z.record(z.string(), z.string()).default({}),
      enabled: z.boolean().default(true),
    }),
  )
  .default({});

/** The scheduler's section lives in its own file. */
export { cronSchema } from "./cron.js";

export { positiveInt };
