import { z } from "zod";
import { TRIGGER_NAME, triggerActionSchema, triggerSourceSchema } from "../config/sections/triggers.js";
import { triggerSources } from "../triggers/sources/index.js";
import { creatorOf } from "./cron-shared.js";
import { defineTool } from "./define-tool.js";
import { triggerCall, triggersOf } from "./trigger-shared.js";

/** The sources as trigger_add names them, from the catalog: "a, b, or c". */
const sources = Object.values(triggerSources);
const listensTo = sources.map((source) => source.listensTo);
const sourceList = `${listensTo.slice(0, -1).join(", ")}, or ${listensTo.at(-1)}`;
const onExamples = sources.map((source) => source.example).join(", ");

export const triggerAddTool = defineTool({
  name: "trigger_add",
  description: `Make an event trigger: when an event arrives (${sourceList}) and the CEL predicate \`when\` holds (e.g. "event.payload.temperature > 30.0"), send a message (template {{event.payload.x}}, no LLM), run a shell command, or run an assistant prompt. Reports to this chat by default. Returns the trigger.`,
  inputSchema: z.object({
    name: z.string().regex(TRIGGER_NAME).describe("Letters, digits, '-' and '_' (also the webhook path)."),
    on: triggerSourceSchema.describe(`One of ${onExamples}.`),
    when: z
      .string()
      .min(1)
      .max(4_000)
      .optional()
      .describe("CEL predicate over `event` (payload, topic, pin, value, line, headers)."),
    do: triggerActionSchema.describe(
      'One of {"message": text}, {"command": cmd}, {"prompt": text, "toolSet"?}.',
    ),
    deliver: z
      .object({
        channel: z.string().min(1).optional(),
        chat_id: z.string().min(1).optional(),
        pushover: z.boolean().optional(),
        ntfy: z.boolean().optional(),
      })
      .optional()
      .describe("Where it reports (default: this chat)."),
    cooldownSecs: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .optional()
      .describe("Quiet time after firing (default 0)."),
    maxPerHour: z
      .number()
      .int()
      .min(1)
      .max(3_600)
      .optional()
      .describe("Firings per hour at most (default 60)."),
  }),
  risk: "high",
  async execute(input, context) {
    const triggers = triggersOf(context);
    const { channel, chatId, threadId } = context.target;
    const fromChat = channel !== "cron" && channel !== "trigger";
    return triggerCall(async () => ({
      trigger: await triggers.add(
        {
          name: input.name,
          on: input.on,
          ...(input.when !== undefined ? { when: input.when } : {}),
          do: input.do,
          ...(input.deliver
            ? {
                deliver: {
                  ...(input.deliver.channel ? { channel: input.deliver.channel } : {}),
                  ...(input.deliver.chat_id ? { chat_id: input.deliver.chat_id } : {}),
                  pushover: input.deliver.pushover ?? false,
                  ntfy: input.deliver.ntfy ?? false,
                },
              }
            : {}),
          cooldownSecs: input.cooldownSecs ?? 0,
          maxPerHour: input.maxPerHour ?? 60,
          enabled: true,
        },
        {
          creator: creatorOf(context),
          createdFrom: fromChat ? { channel, chatId, ...(threadId ? { threadId } : {}) } : null,
        },
      ),
    }));
  },
});
