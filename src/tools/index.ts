import type { Tool } from "./define-tool.js";
import { memoryForgetTool } from "./memory-forget.js";
import { memoryRecallTool } from "./memory-recall.js";
import { memoryStoreTool } from "./memory-store.js";
import { spillReadTool } from "./spill-read.js";

/**
 * Every built-in tool, in one list. Each feature adds its tools here (one tool per file);
 * conditional tools decide through `isEnabled(config)`.
 */
export const builtinTools: Tool[] = [
  spillReadTool as Tool,
  memoryStoreTool as Tool,
  memoryRecallTool as Tool,
  memoryForgetTool as Tool,
];
