/**
 * Preloaded into the shipped CLI by the shipped-build tests (`node --import ./record-chunks.mjs dist/bundle/main.js`):
 * every module of dist/bundle/ that the process loads is appended to dist/bundle/.chunk-loads/<pid>.txt, so
 * scripts/check-chunk-coverage.mjs can name a chunk that no test ever loaded. Test-only; the product never loads it.
 */
import { register } from "node:module";

register("./record-chunks-hooks.mjs", import.meta.url);
