import { createMemoryService } from "../memory/create-memory-service.js";
import { memoryCommands } from "../memory/memory-commands.js";
import { memoryHooks } from "../memory/memory-hooks.js";
import { ProvenanceStore } from "../security/provenance-store.js";
import type { MagpieFeature } from "./feature.js";

/** Long-term memory: the `memory` service for tools, automatic recall, conversation memory, slash commands. */
export const memoryFeature: MagpieFeature = {
  name: "memory",
  provides: ["memory"],
  setup(config, app) {
    const logger = app.logger.child({ component: "memory" });
    const service = createMemoryService(config, app.store.db, logger, app.clock);
    // The app's directory: a reload's new agents and routes reach recall and /memory too.
    const directory = app.agent.directory;
    app.services.memory = service;
    return {
      commands: memoryCommands(service, directory),
      warmUp: () => service.repository.warm(),
      hooks: [memoryHooks(service, config, directory, logger, new ProvenanceStore(app.store.db))],
      stop: () => service.close(),
    };
  },
  start(_config, app) {
    app.services.memory?.startBackgroundIndexing();
  },
};
