import type { Logger } from "pino";
import type { MagpieConfig } from "../src/config/schema.js";
import type { HttpRoutes } from "../src/http/routes.js";
import type { Store } from "../src/store/index.js";

/** What every chat adapter is built from. */
export interface ChannelDeps {
  config: MagpieConfig;
  logger: Logger;
  http: HttpRoutes;
  store: Store;
}
