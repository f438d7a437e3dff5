// Test-only preload (`node --import test/helpers/block-loop.mjs …`): on SIGUSR2, busy-waits BLOCK_LOOP_MS
// (default 3000) on the main thread, a wedged event loop made to order. Signal handlers run on the loop, so the
// block starts between two of its turns. BLOCK-START / BLOCK-END go to stderr with synchronous writes, because
// nothing asynchronous runs until the block is over.
import { writeSync } from "node:fs";

const blockMs = Number(process.env.BLOCK_LOOP_MS ?? 3000);
process.on("SIGUSR2", () => {
  writeSync(2, "BLOCK-START\n");
  const until = performance.now() + blockMs;
  while (performance.now() < until) {
    // Spin: no timer, no I/O callback and no request handler runs until this returns.
  }
  writeSync(2, "BLOCK-END\n");
});
