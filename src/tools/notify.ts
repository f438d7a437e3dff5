import { z } from "zod";
import { createPhoneNotifier } from "../notify/phone.js";
import { NotifyError } from "../notify/pushover.js";
import { defineTool, ToolError } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";

/** The word priorities every provider understands, as Pushover's −1 … 2 (ntfy maps them to its 2 … 5). */
const PRIORITY = { low: -1, default: 0, high: 1, urgent: 2 } as const;

export const notifyTool = defineTool({
  name: "notify",
  description:
    "Send a push notification to the owner's phone through every configured provider (Pushover, ntfy). Priority low, default, high or urgent (urgent on Pushover repeats until acknowledged).",
  inputSchema: z.object({
    message: z.string().min(1).describe("The notification text."),
    title: z.string().min(1).optional().describe("Title (default: the app's name)."),
    priority: z.enum(["low", "default", "high", "urgent"]).optional().describe("Default: default."),
  }),
  risk: "low",
  async execute(input, context) {
    // Free after untrusted content (it reaches only the owner's phone), but what leaves is checked like a message.
    refuseOutboundLeak(context, [{ kind: "message", value: [input.title ?? "", input.message].join("\n") }]);
    const notifier = context.services.notifier ?? createPhoneNotifier(context.config.notify);
    try {
      const sent = await notifier.send({
        message: input.message,
        ...(input.title ? { title: input.title } : {}),
        priority: PRIORITY[input.priority ?? "default"],
      });
      return { ok: true, sent: true, via: sent };
    } catch (error) {
      if (error instanceof NotifyError) throw new ToolError(error.code, error.message);
      throw error;
    }
  },
});
