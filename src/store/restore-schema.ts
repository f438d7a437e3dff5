import Database from "better-sqlite3";
import { z } from "zod";
import { row } from "../lib/row.js";
import { migrate } from "./database.js";
import type { Migration } from "./migrations/index.js";

const schemaObjects = row(
  z.object({ type: z.string(), name: z.string(), tbl_name: z.string(), sql: z.string().nullable() }),
  "sqlite_master",
);

/** A row of `sqlite_master`: every table, index, view and trigger a database holds, with the SQL that made it. */
interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

/** How a backup's schema differs from what its migrations create. */
export interface SchemaDifference {
  /** `extra`: no migration creates it; `altered`: its SQL differs; `missing`: a migration creates it, the backup lacks it. */
  kind: "extra" | "altered" | "missing";
  type: string;
  name: string;
  /** The table a trigger or index belongs to. */
  table: string;
}

/**
 * SQLite's own statistics tables (written by `ANALYZE` and `PRAGMA optimize`), allowed with exactly the SQL SQLite
 * gives them: they hold numbers for the query planner, never code.
 */
const SQLITE_STATISTICS = new Map([
  ["sqlite_stat1", "CREATE TABLE sqlite_stat1(tbl,idx,stat)"],
  ["sqlite_stat4", "CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)"],
]);

/**
 * Compares `db`'s schema with a fresh in-memory database migrated with the same migrations (`versions`, the ones
 * its `schema_migrations` lists): type, name, table and SQL (whitespace runs collapsed) of every object. A trigger,
 * view, index or table no migration creates — or one whose SQL was changed, e.g. a column's default — is how a
 * crafted backup would run its own code on Magpie's next write. Throws when the versions can't be rebuilt.
 */
export function schemaDifferences(
  db: Database.Database,
  versions: number[],
  migrations: Migration[],
): SchemaDifference[] {
  const wanted = new Set(versions);
  const fresh = new Database(":memory:");
  let expected: SchemaObject[];
  try {
    migrate(
      fresh,
      migrations.filter((migration) => wanted.has(migration.version)),
    );
    expected = objectsOf(fresh);
  } finally {
    fresh.close();
  }
  const expectedByKey = new Map(expected.map((object) => [keyOf(object), object]));
  const differences: SchemaDifference[] = [];
  const seen = new Set<string>();
  for (const object of objectsOf(db)) {
    const key = keyOf(object);
    seen.add(key);
    const statistics = SQLITE_STATISTICS.get(object.name);
    if (statistics !== undefined && object.type === "table" && object.sql === statistics) continue;
    const twin = expectedByKey.get(key);
    if (!twin) differences.push(difference("extra", object));
    else if (twin.tbl_name !== object.tbl_name || normalized(twin.sql) !== normalized(object.sql))
      differences.push(difference("altered", object));
  }
  for (const object of expected)
    if (!seen.has(keyOf(object))) differences.push(difference("missing", object));
  return differences;
}

/** For a message: `trigger "make_owner" (on inbox)`, the name with control characters escaped. */
export function describeObject(object: { type: string; name: string; table: string }): string {
  const table = object.table && object.table !== object.name ? ` (on ${printable(object.table)})` : "";
  return `${object.type} ${printable(object.name)}${table}`;
}

function objectsOf(db: Database.Database): SchemaObject[] {
  return schemaObjects.all(
    db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all(),
  );
}

const keyOf = (object: SchemaObject) => `${object.type}\u0000${object.name}`;

function difference(kind: SchemaDifference["kind"], object: SchemaObject): SchemaDifference {
  return { kind, type: object.type, name: object.name, table: object.tbl_name };
}

/** The SQL with each run of whitespace as one space: a migration re-indented later still matches. */
function normalized(sql: string | null): string | null {
  return sql === null ? null : sql.replace(/\s+/g, " ").trim();
}

const MAX_NAME = 80;

/**
 * A name from the backup, quoted, as it can be printed on a terminal: control characters (C0, DEL, C1), line and
 * paragraph separators, bidirectional overrides and lone surrogates as `\u…` escapes (a quote or backslash gets a
 * backslash, so an escape can't be faked), and at most 80 characters. A loop over char
 * codes rather than a regex: the ranges read plainer, and the linter rejects control characters in a regex.
 */
export function printable(name: string): string {
  let shown = "";
  for (const character of name.slice(0, MAX_NAME)) {
    const code = character.codePointAt(0) ?? 0;
    const hidden =
      code < 0x20 ||
      (code >= 0x7f && code <= 0x9f) ||
      code === 0x2028 ||
      code === 0x2029 ||
      (code >= 0xd800 && code <= 0xdfff) ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069);
    if (hidden) shown += `\\u${code.toString(16).padStart(4, "0")}`;
    else shown += character === '"' || character === "\\" ? `\\${character}` : character;
  }
  return `"${shown}${name.length > MAX_NAME ? "…" : ""}"`;
}
