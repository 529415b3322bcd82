import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Knex } from "knex";
import { from as copyFrom } from "pg-copy-streams";
import { dropConnection, isPostgresKnex, isReadTimeout, withConnection, type PgConnection } from "./driver-patches.js";
import { DatabaseTimeoutError } from "./timeouts.js";

/**
 * Streams `lines` into `COPY … FROM STDIN` on the connection of `knex` (a transaction's own, inside
 * one). Returns false, copying nothing, on the embedded database, which has no COPY from a client.
 */
export async function copyFromStdin(knex: Knex, statement: string, lines: Iterable<string>): Promise<boolean> {
  if (!isPostgresKnex(knex)) return false;
  await copyLines(knex, statement, lines);
  return true;
}

/** {@link copyFromStdin} on a knex known to be on PostgreSQL (its driver's client, patched or not); the data as text or as buffers (binary COPY). */
export function copyLines(knex: Knex, statement: string, lines: Iterable<string | Buffer>): Promise<void> {
  return withConnection(knex, (connection) => boundedCopy(connection, statement, lines));
}

/**
 * `COPY … FROM STDIN` on the connection of a transaction. The driver holds COPY to the read
 * time-out as any statement, but leaves the connection as it was: the transaction's ROLLBACK then
 * waited a second read time-out behind the lost answer (a CI run saw a frozen database cost twice
 * the bound). Here, as in PostgresClient, a COPY that got no answer drops its connection.
 */
async function boundedCopy(connection: PgConnection, statement: string, lines: Iterable<string | Buffer>): Promise<void> {
  try {
    await pipeline(Readable.from(lines), connection.query(copyFrom(statement)));
  } catch (err) {
    if (!isReadTimeout(err)) throw err;
    throw dropConnection(connection, new DatabaseTimeoutError("the database sent no answer to COPY within the statement time-out; the connection was dropped", { cause: err }));
  }
}
