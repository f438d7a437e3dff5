import type { Migration } from "./index.js";

/**
 * Change counters SQLite keeps itself (issue 35, hot path): every turn read its chat's recent history and the core
 * memories afresh — about 0.9 ms of each message's 3.5 ms to its LLM request — although neither had changed since
 * the last turn. A trigger bumps `messages:<session>` for every message row inserted, deleted or updated in that
 * session, and `core:<agent>` for every core memory of that agent inserted, deleted or updated (its text, audience,
 * category, access count, anything), by whichever connection writes — a turn, a compaction, retention, `magpie`
 * commands in another process, an old release after a rollback. A reader keeps what it read with the counter it
 * read first, and reads again only when the counter moved (src/store/change-counters.ts). Counters only grow; a
 * name's row is never deleted.
 */
export const changeCountersMigration: Migration = {
  version: 37,
  name: "store: change counters for the history and the core memories a turn reads",
  up: `
    CREATE TABLE change_counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;

    CREATE TRIGGER messages_count_insert AFTER INSERT ON messages BEGIN
      INSERT INTO change_counters (name, n) VALUES ('messages:' || NEW.session_key, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER messages_count_delete AFTER DELETE ON messages BEGIN
      INSERT INTO change_counters (name, n) VALUES ('messages:' || OLD.session_key, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER messages_count_update AFTER UPDATE ON messages BEGIN
      INSERT INTO change_counters (name, n) VALUES ('messages:' || OLD.session_key, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
      INSERT INTO change_counters (name, n) SELECT 'messages:' || NEW.session_key, 1
        WHERE NEW.session_key IS NOT OLD.session_key
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;

    CREATE TRIGGER core_count_insert AFTER INSERT ON memories WHEN NEW.category = 'core' BEGIN
      INSERT INTO change_counters (name, n) VALUES ('core:' || NEW.agent, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER core_count_delete AFTER DELETE ON memories WHEN OLD.category = 'core' BEGIN
      INSERT INTO change_counters (name, n) VALUES ('core:' || OLD.agent, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER core_count_update AFTER UPDATE ON memories
      WHEN OLD.category = 'core' OR NEW.category = 'core' BEGIN
      INSERT INTO change_counters (name, n) VALUES ('core:' || OLD.agent, 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
      INSERT INTO change_counters (name, n) SELECT 'core:' || NEW.agent, 1
        WHERE NEW.agent IS NOT OLD.agent
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
    END;
  `,
};
