import { createHash } from "node:crypto";
import type { Knex } from "knex";
import { LRUCache } from "lru-cache";
import { isPostgresKnex, numberPlaceholders, queryNamed, withConnection } from "./driver-patches.js";

/** Statement texts whose name and numbered text are kept. */
const TEXTS_KEPT = 10_000;
const preparedNames = new LRUCache<string, string>({ max: TEXTS_KEPT });
/** The driver's text of a statement written with `?` placeholders ($1, $2, …), by that statement. */
const numberedTexts = new LRUCache<string, string>({ max: TEXTS_KEPT });

/**
 * The name a statement is prepared under on the driver's connections: the statement's text,
 * hashed. A named statement is parsed once per connection, and on the graph pool planned once too
 * (see GRAPH_SESSION_SETTINGS in src/db/pools.ts). Only statements run outside a transaction take
 * names (see {@link runPrepared}).
 */
export function preparedName(sql: string): string {
  let name = preparedNames.get(sql);
  if (name === undefined) {
    name = `p_${createHash("sha256").update(sql).digest("hex").slice(0, 32)}`;
    preparedNames.set(sql, name);
  }
  return name;
}

/**
 * Runs a statement written with `?` placeholders as the named prepared statement
 * {@link preparedName} gives it, on a connection of `knex`'s pool (PostgreSQL only), and answers
 * its rows. It goes the way `knex.raw(…).options({ name })` goes — the pool, its acquire time-out,
 * PostgresClient's handling of a lost answer and its bound on prepared statements — without knex's
 * query builder, whose work on the text at every run (placing the bindings, numbering the
 * placeholders) cost ~0.2 ms on the walk of every API request. The text is numbered once, by
 * knex's own numbering. Not for a statement inside a transaction, nor one that writes (knex's
 * query events are not emitted).
 */
export async function runPrepared<Row>(knex: Knex, sql: string, bindings: readonly unknown[]): Promise<Row[]> {
  let text = numberedTexts.get(sql);
  if (text === undefined) {
    if (/\\\?|\?\?/.test(sql)) throw new Error("runPrepared takes plain `?` placeholders only (no `??` identifiers, no escaped `\\?`)");
    text = numberPlaceholders(knex, sql);
    numberedTexts.set(sql, text);
  }
  const numbered = text;
  return withConnection(knex, (connection) => queryNamed<Row>(knex, connection, numbered, bindings, preparedName(sql)));
}

/**
 * The rows of a statement run by `knex.raw` — knex's query events emitted, as for any statement,
 * writes included — prepared under {@link preparedName} on PostgreSQL outside a transaction: its
 * text fixed, it is parsed and planned once per connection, and knex builds no query at each run.
 */
export async function rawPrepared<Row>(knex: Knex, sql: string, bindings: readonly Knex.RawBinding[]): Promise<Row[]> {
  const raw = knex.raw(sql, bindings);
  const named = isPostgresKnex(knex) && !knex.isTransaction ? raw.options({ name: preparedName(sql) }) : raw;
  return ((await named) as { rows: Row[] }).rows;
}
