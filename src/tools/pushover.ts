import { z } from "zod";
import { createPushoverNotifier, NotifyError } from "../notify/pushover.js";
import { defineTool, ToolError } from "./define-tool.js";
import { refuseOutboundLeak } from "./outbound-check.js";

export const pushoverTool = defineTool({
  name: "pushover",
  description:
    "Send a push notification to the owner's phone via Pushover. Priority −2 (silent) … 2 (emergency: repeats every `retry` seconds until acknowledged or `expire` seconds pass).",
  inputSchema: z.object({
    message: z.string().min(1).describe("The notification text (up to 1024 characters)."),
    title: z.string().min(1).optional().describe("Title (default: the app's name)."),
    priority: z.number().int().min(-2).max(2).optional().describe("−2 lowest … 0 normal … 2 emergency."),
    sound: z.string().min(1).optional().describe("A Pushover sound name, e.g. pushover, siren, none."),
    retry: z
      .number()
      .int()
      .min(30)
      .optional()
      .describe("Priority 2 only: seconds between repeats (≥ 30, default 60)."),
    expire: z
      .number()
      .int()
      .min(30)
      .max(10800)
      .optional()
      .describe("Priority 2 only: stop repeating after this many seconds (≤ 10800, default 3600)."),
  }),
  risk: "low",
  async execute(input, context) {
    // Free after untrusted content (it reaches only the owner's phone), but what leaves is checked like a message.
    refuseOutboundLeak(context, [{ kind: "message", value: [input.title ?? "", input.message].join("\n") }]);
    const notifier = context.services.notifier ?? createPushoverNotifier(context.config.notify.pushover);
    try {
      const request = await notifier.send(
        { ...input, priority: input.priority as -2 | -1 | 0 | 1 | 2 | undefined },
        ["pushover"],
      );
      return { ok: true, sent: true, request };
    } catch (error) {
      if (error instanceof NotifyError) throw new ToolError(error.code, error.message);
      throw error;
    }
  },
});
