import path from "node:path";

/** The production CLI as users run it: the esbuild bundle `npm run build` writes (scripts/bundle.mjs). */
export const MAGPIE_CLI = path.resolve("dist/bundle/main.js");

/**
 * Node's arguments to run the shipped CLI in a test: the bundle, with test/shipped/record-chunks.mjs preloaded so
 * scripts/check-chunk-coverage.mjs knows which chunks the tests loaded.
 */
export const MAGPIE_NODE_ARGS = ["--import", path.resolve("test/shipped/record-chunks.mjs"), MAGPIE_CLI];
