// The version lookup lives in src/lib/manifest.ts (the CLI shows the same); re-exported for the dashboard's pages.
export { magpieVersion } from "../lib/manifest.js";
