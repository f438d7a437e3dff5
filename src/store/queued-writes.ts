import { atomic } from "./atomic.js";
import type { Db } from "./database.js";

interface QueuedWrite {
  write: () => void;
  /** Told when the write fails; the write that fails does not fail the transaction it was flushed in. */
  onError: (error: unknown) => void;
}

interface Queue {
  writes: QueuedWrite[];
  scheduled: boolean;
}

const queues = new WeakMap<Db, Queue>();

/**
 * Queues a row write on a connection, to go in the transaction of the next step written to the journal
 * (`flushQueuedWrites`, issue 35, hot path: an LLM call's ledger row was a commit of its own just before its step's
 * journal commit), or on the next turn of the event loop when no step comes first. Whoever reads what such writes
 * write in this process flushes first (`flushQueuedWrites`), so a read sees every write queued before it.
 */
export function queueWrite(db: Db, write: () => void, onError: (error: unknown) => void): void {
  let queue = queues.get(db);
  if (!queue) {
    queue = { writes: [], scheduled: false };
    queues.set(db, queue);
  }
  queue.writes.push({ write, onError });
  if (queue.scheduled) return;
  queue.scheduled = true;
  setImmediate(() => {
    queue.scheduled = false;
    flushQueuedWrites(db);
  });
}

/** Writes what is queued on the connection: inside the open transaction if there is one, else in one of its own. */
export function flushQueuedWrites(db: Db): void {
  const queue = queues.get(db);
  if (!queue || queue.writes.length === 0 || !db.open) return;
  const writes = queue.writes.splice(0);
  const run = () => {
    for (const { write, onError } of writes) {
      try {
        write();
      } catch (error) {
        onError(error);
      }
    }
  };
  if (db.inTransaction) run();
  else atomic(db, run);
}
