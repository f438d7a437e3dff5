import { z } from "zod";
import { defineTool, ToolError } from "../../src/tools/define-tool.js";

/** Test-only tools that prove the agent loop without touching the machine. */
export const addTool = defineTool({
  name: "add_numbers",
  description: "Add two numbers.",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  risk: "low",
  execute: ({ a, b }) => ({ sum: a + b }),
});

export const echoTool = defineTool({
  name: "echo",
  description: "Echo text back.",
  inputSchema: z.object({ text: z.string() }),
  risk: "low",
  execute: ({ text }) => `echo: ${text}`,
});

export const failingTool = defineTool({
  name: "always_fails",
  description: "Fails with a guard-like error.",
  inputSchema: z.object({}),
  risk: "high",
  execute: () => {
    throw new ToolError("test.refused", "Refused by the test guard. Try something else.");
  },
});

/** How many `slow` calls have started (tests wait for one before they stop it). */
export const slowToolRuns = { started: 0 };

/** Waits for the abort signal (or `ms`), to test /stop and shutdown. */
export const slowTool = defineTool({
  name: "slow",
  description: "Takes a while.",
  inputSchema: z.object({ ms: z.number().default(10_000) }),
  risk: "low",
  execute: ({ ms }, context) =>
    new Promise<string>((resolve) => {
      slowToolRuns.started++;
      const timer = setTimeout(() => resolve("slow done"), ms);
      context.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve("slow aborted");
      });
    }),
});

export const testTools = [addTool, echoTool, failingTool, slowTool];
export const testToolNames = testTools.map((tool) => tool.name);
