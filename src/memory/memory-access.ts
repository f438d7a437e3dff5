import type { Role } from "../core/identity.js";
import { MagpieError } from "../lib/errors.js";

/**
 * Who may see a memory (DESIGN.md → Security → "Memory privacy"). Every memory is the owners': a guest's
 * turn stores none, so there is no other audience yet — one would need its own recall rule first.
 */
export type MemoryAudience = "owners";

/** The audiences a turn of `role` may recall: owners see the owners' memories; guests see none. */
export function audiencesFor(role: Role): MemoryAudience[] {
  return role === "owner" ? ["owners"] : [];
}

/** A guest's turn tried to change long-term memory. */
export class MemoryAccessError extends MagpieError {
  constructor(action: "store" | "forget") {
    super(
      "memory.guest_not_allowed",
      `Long-term memory belongs to the owners: a guest's turn can't ${action} memories.`,
    );
    this.name = "MemoryAccessError";
  }
}

/** The audience of a memory written in a turn of `role`; throws for a guest, who can't add or remove any. */
export function audienceOfWrite(role: Role, action: "store" | "forget"): MemoryAudience {
  if (role !== "owner") throw new MemoryAccessError(action);
  return "owners";
}
