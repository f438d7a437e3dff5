import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    // The second reporter prints one line at the end naming programs (chromium, socat, bwrap) whose tests skipped.
    reporters: ["default", "./test/helpers/missing-programs-reporter.ts"],
  },
});
