import type { ToolServices } from "../tools/context.js";
import { ToolError } from "../tools/define-tool.js";
import { MemoryService } from "./memory-service.js";

/** The memory service tools reach through `context.services.memory`. */
export function memoryServiceOf(services: ToolServices): MemoryService {
  const service = services.memory;
  if (!(service instanceof MemoryService)) {
    throw new ToolError(
      "memory.unavailable",
      "Long-term memory is not available: the memory feature is not set up (src/app/features.ts).",
    );
  }
  return service;
}
