import type { MemoryService } from "../memory/memory-service.js";
import type { ToolContext, ToolServices } from "./context.js";
import { ToolError } from "./define-tool.js";

/** The memory service tools reach through `context.services.memory`. */
export function memoryServiceOf(services: ToolServices): MemoryService {
  const service = services.memory;
  if (!service) {
    throw new ToolError(
      "memory.unavailable",
      "Long-term memory is not available: the memory feature is not set up (src/app/features.ts).",
    );
  }
  return service;
}

/**
 * The memory service for a tool call made in an owner's turn. Long-term memory is the owners': a guest's
 * turn that was given a memory tool (through `security.guestToolSet`) is refused, and nothing is read.
 */
export function ownersMemoryOf(
  context: Pick<ToolContext, "services" | "sender">,
  tool: string,
): MemoryService {
  if (context.sender.role !== "owner") {
    throw new ToolError(
      "memory.guest_not_allowed",
      `Long-term memory belongs to the owners: '${tool}' is not available in a guest's turn.`,
    );
  }
  return memoryServiceOf(context.services);
}
