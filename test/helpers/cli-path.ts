import path from "node:path";

/** The production CLI as users run it: the esbuild bundle `npm run build` writes (scripts/bundle.mjs). */
export const MAGPIE_CLI = path.resolve("dist/bundle/main.js");
