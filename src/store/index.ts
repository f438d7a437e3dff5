import path from "node:path";
import { AuditRepository } from "./audit.js";
import { type Db, openDatabase } from "./database.js";
import { HistoryRepository } from "./history.js";
import { InboxRepository } from "./inbox.js";
import { KvRepository } from "./kv.js";
import { OutboxRepository } from "./outbox.js";
import { flushQueuedWrites } from "./queued-writes.js";
import { StepJournal } from "./step-journal.js";

/** The SQLite database and its repositories. Features with tables of their own take `db`. */
export class Store {
  readonly inbox: InboxRepository;
  readonly outbox: OutboxRepository;
  readonly history: HistoryRepository;
  readonly audit: AuditRepository;
  readonly kv: KvRepository;
  readonly journal: StepJournal;

  constructor(readonly db: Db) {
    this.inbox = new InboxRepository(db);
    this.outbox = new OutboxRepository(db);
    this.history = new HistoryRepository(db);
    this.audit = new AuditRepository(db);
    this.kv = new KvRepository(db);
    this.journal = new StepJournal(db);
  }

  /** Opens `<dataDir>/magpie.db` (or `:memory:`). */
  static open(dataDirOrMemory: string): Store {
    const file = dataDirOrMemory === ":memory:" ? ":memory:" : path.join(dataDirOrMemory, "magpie.db");
    return new Store(openDatabase(file));
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  close(): void {
    if (!this.db.open) return;
    flushQueuedWrites(this.db);
    this.db.close();
  }
}

export type { Db };
