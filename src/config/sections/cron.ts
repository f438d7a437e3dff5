import { z } from "zod";
import { idSchema, positiveInt } from "./common.js";

/** Where a job's output goes. Chat target defaults to the chat the job was created from. */
export const deliverSchema = z.strictObject({
  channel: z.string().min(1).optional(),
  chatId: idSchema.optional(),
  /** Also push the report to the phone through Pushover (notify.pushover). */
  pushover: z.boolean().default(false),
  /** Also publish the report to the ntfy topic (notify.ntfy). */
  ntfy: z.boolean().default(false),
  mode: z.enum(["always", "on_error", "on_success", "none"]).default("always"),
});

/** A job declared in config; synced into the database by `name` at startup. */
export const cronJobConfigSchema = z
  .strictObject({
    name: z.string().min(1),
    /** Cron expression, 5 fields or 6 with seconds first. */
    expression: z.string().min(1).optional(),
    /** One-shot after a delay: 30s, 30m, 2h, 1d. */
    delay: z.string().min(1).optional(),
    /** One-shot at an ISO time. */
    at: z.string().min(1).optional(),
    command: z.string().min(1).optional(),
    prompt: z.string().min(1).optional(),
    message: z.string().min(1).optional(),
    timezone: z.string().min(1).optional(),
    deliver: deliverSchema.optional(),
    enabled: z.boolean().default(true),
    /** Tools an agent job may use: a tool set name or a list of tool names (default: `default`). */
    toolSet: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
    agent: z.string().min(1).optional(),
    /**
     * Tools a prompt job may still use after untrusted content (a page, a payload) entered its run; anything else
     * that communicates or changes lasting state is refused there (DESIGN.md → Security → "Untrusted content").
     */
    allowAfterUntrusted: z.array(z.string().min(1)).optional(),
  })
  .superRefine((job, context) => {
    const schedules = [job.expression, job.delay, job.at].filter((value) => value !== undefined).length;
    if (schedules !== 1) {
      context.addIssue({
        code: "custom",
        message: "give exactly one of expression (cron), delay (30m) or at (ISO time)",
      });
    }
    const payloads = [job.command, job.prompt, job.message].filter((value) => value !== undefined).length;
    if (payloads !== 1) {
      context.addIssue({
        code: "custom",
        message: "give exactly one of command (shell), prompt (agent) or message (fixed text)",
      });
    }
  });

export const cronSchema = z
  .strictObject({
    /** After downtime, run each missed job once at startup. */
    catchUp: z.boolean().default(true),
    /** Runs kept per job. */
    maxRunHistory: positiveInt.default(50),
    /** A run still going after this long is stopped and recorded as `timeout`. */
    runTimeoutSecs: positiveInt.default(900),
    jobs: z
      .array(cronJobConfigSchema)
      .default([])
      .superRefine((jobs, context) => {
        const seen = new Set<string>();
        jobs.forEach((job, index) => {
          if (seen.has(job.name)) {
            context.addIssue({
              code: "custom",
              path: [index, "name"],
              message: `duplicate job name "${job.name}" — config jobs are synced by name, so names must be unique`,
            });
          }
          seen.add(job.name);
        });
      }),
  })
  .prefault({});

export type CronJobConfig = z.infer<typeof cronJobConfigSchema>;
export type DeliverConfig = z.infer<typeof deliverSchema>;
