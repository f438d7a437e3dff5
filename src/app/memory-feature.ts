import { createMemoryService } from "../memory/create-memory-service.js";
import { memoryCommands } from "../memory/memory-commands.js";
import { memoryHooks } from "../memory/memory-hooks.js";
import { ProvenanceStore } from "../security/provenance-store.js";
import type { MagpieFeature } from "./feature.js";

/** Long-term memory: the `memory` service for tools, automatic recall, conversation memory, slash commands. */
export const memoryFeature: MagpieFeature = {
  name: "memory",
  provides: ["memory"],
  setup(app) {
    const logger = app.logger.child({ component: "memory" });
    const service = createMemoryService(app.config, app.store.db, logger, app.clock);
    // The app's directory: a reload's new agents and routes reach recall and /memory too.
    const directory = app.agents;
    app.services.memory = service;
    app.commands.register(...memoryCommands(service, directory));
    return {
      warmUp: () => service.repository.warm(),
      hooks: [memoryHooks(service, app.config, directory, logger, new ProvenanceStore(app.store.db))],
      stop: () => service.close(),
    };
  },
  start(app) {
    app.services.memory?.startBackgroundIndexing();
  },
};
