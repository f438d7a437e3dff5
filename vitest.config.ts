import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    // Two test files at a time even on two cores: most of the suite waits on child processes, sockets and timers
    // (the shipped bot, Dovecot, Chromium), so a second worker roughly halves the wall time (vitest's default on two
    // cores is one worker). Tests wait for conditions, not fixed sleeps, so they hold under the extra load.
    maxWorkers: 2,
    // The second reporter prints one line at the end naming programs (chromium, socat, bwrap) whose tests skipped.
    reporters: ["default", "./test/helpers/missing-programs-reporter.ts"],
  },
});
