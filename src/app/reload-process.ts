import path from "node:path";
import { loadConfig } from "../config/load.js";
import { createRedactor, type Redactor } from "../log/redact.js";
import { checkTriggerPredicates } from "../triggers/check-predicates.js";
import type { MagpieApp } from "./app.js";
import { ownerAlerter } from "./owner-alert.js";
import { ConfigReloader } from "./reload-runner.js";

/**
 * The running process's reloads: SIGHUP (what `magpie reload` sends) and a change of the config file or `.env`
 * re-read the config the way start-up did — the same file, the environment as it was before `.env` was loaded —
 * and apply it. Returns the function that stops listening.
 */
export function listenForReloads(
  app: MagpieApp,
  {
    startEnv,
    logRedactor,
    debounceMs,
  }: {
    startEnv: NodeJS.ProcessEnv;
    /** The log's redactor, when it is not the app's: new secrets join it too. */
    logRedactor?: Redactor;
    debounceMs?: number;
  },
): () => Promise<void> {
  const { config } = app;
  const logger = app.logger.child({ component: "reload" });
  const cwd = process.cwd();
  /** Variables the last `.env` put into the process environment (the real environment always wins). */
  let fromDotenv = Object.keys(process.env).filter((name) => startEnv[name] === undefined);
  const reloader = new ConfigReloader({
    apply: async (next) => {
      const result = await app.reload(next);
      if (logRedactor && logRedactor !== app.redactor) createRedactor(app.config, process.env, logRedactor);
      return result;
    },
    running: config,
    logger,
    redactor: app.redactor,
    tellOwner: ownerAlerter(app.context, logger),
    ...(debounceMs !== undefined ? { debounceMs } : {}),
    load: async () => {
      const env: NodeJS.ProcessEnv = { ...startEnv };
      const next = loadConfig({ configPath: config.sourcePath ?? undefined, env, cwd });
      // A bad trigger predicate makes the whole file invalid, as at start-up and in `magpie config check`.
      await checkTriggerPredicates(next.triggers);
      // Valid: what tools and servers read from the environment follows the new `.env` too.
      const loaded = Object.keys(env).filter((name) => startEnv[name] === undefined);
      for (const name of fromDotenv) if (env[name] === undefined) delete process.env[name];
      for (const name of loaded) process.env[name] = env[name];
      fromDotenv = loaded;
      return next;
    },
  });
  const onSignal = () => {
    logger.info("config-reload-requested");
    void reloader.request("signal");
  };
  process.on("SIGHUP", onSignal);
  const files = [
    ...(config.sourcePath ? [config.sourcePath] : []),
    path.join(cwd, ".env"),
    ...config.envFiles,
  ];
  reloader.watch([...new Set(files)]);
  return async () => {
    process.off("SIGHUP", onSignal);
    await reloader.close();
  };
}
