import { z } from "zod";
import { defineTool, ToolError } from "./define-tool.js";

const MAX_TIMEOUT_SECS = 24 * 3600;

export const askQuestionTool = defineTool({
  name: "ask_question",
  description:
    "Ask the person you are talking to a question in the chat and wait for the answer: options become buttons (numbered where the chat has none); they answer by button, by number or label, or (allow_custom, default true) in their own words. Returns {answer, option_id?} or {answer: null, reason: 'timeout'}.",
  inputSchema: z.object({
    prompt: z.string().min(1).max(2000).describe("The question."),
    options: z
      .array(
        z.object({
          id: z.string().min(1).max(64).describe("Returned as option_id when chosen."),
          label: z.string().min(1).max(200).describe("Shown on the button."),
        }),
      )
      .max(10)
      .default([])
      .describe("Choices (up to 10); empty for a free-text question."),
    suggested_answer: z.string().max(200).optional().describe("Shown as a hint."),
    allow_custom: z.boolean().default(true).describe("Accept an answer that is not one of the options."),
    timeout_secs: z
      .number()
      .int()
      .min(1)
      .max(MAX_TIMEOUT_SECS)
      .default(3600)
      .describe("How long to wait (default 3600 s)."),
  }),
  risk: "low",
  async execute(input, context) {
    const ids = new Set(input.options.map((option) => option.id));
    if (ids.size !== input.options.length)
      throw new ToolError("question.duplicate_option", "Option ids must be unique.");
    const answer = await context.ask({
      prompt: input.prompt,
      options: input.options,
      ...(input.suggested_answer ? { suggestedAnswer: input.suggested_answer } : {}),
      allowCustom: input.allow_custom,
      timeoutMs: input.timeout_secs * 1000,
    });
    if (answer.answer === null && answer.reason === "cancelled")
      throw new ToolError("tool.aborted", "The question was cancelled because the turn was stopped.");
    return answer;
  },
});
