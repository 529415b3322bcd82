/**
 * Every use of a private member of knex, pg or knex-pglite, in one place. These packages are pinned
 * to exact versions in package.json; test/db/driver-internals.test.ts checks each member listed in
 * {@link DRIVER_INTERNALS} and fails naming the one that changed. Before moving a pin, run it.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Knex } from "knex";
import ClientPGLite from "knex-pglite";
import pg from "pg";
import { PreparedStatements } from "./statement-cache.js";
import { DatabaseTimeoutError } from "./timeouts.js";

/** A connection of knex's PostgreSQL client: a pg.Client, with the members read here. */
export type PgConnection = pg.ClientBase & {
  /** pg's wire connection: its socket, and the statements parsed on it by name. */
  connection?: { stream?: { destroy(): void }; parsedStatements?: Record<string, string> };
  /** knex's mark of a connection its pool must not hand out again. */
  __knex__disposed?: unknown;
};

interface CompiledQuery {
  method?: string;
  [key: string]: unknown;
}

/** The members of knex's PostgreSQL client used here (lib/dialects/postgres/index.js and lib/client.js). */
interface KnexPgClientMembers {
  _query(connection: PgConnection, obj: unknown): Promise<unknown>;
  _acquireOnlyConnection(): Promise<PgConnection>;
  positionBindings(sql: string): string;
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
}

const requireCjs = createRequire(import.meta.url);
/** knex's PostgreSQL client class, which knex exports by no public path. */
export const KNEX_PG_CLIENT_PATH = "knex/lib/dialects/postgres/index.js";
const KnexPgClient = requireCjs(KNEX_PG_CLIENT_PATH) as new (config: Knex.Config) => KnexPgClientMembers;

/** A prepared statement whose result type changed since it was planned (feature_not_supported). */
const CACHED_PLAN_CHANGED = "0A000";
/** pg's message when the server sent nothing for `query_timeout` ms. */
const PG_READ_TIMEOUT = "Query read timeout";
/** pg's messages when a connection did not complete within `connectionTimeoutMillis`. */
const PG_CONNECT_TIMEOUT = /^timeout expired$|connection timeout/i;

/** The driver's read time-out: the server sent nothing for `query_timeout` ms. */
export function isReadTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === PG_READ_TIMEOUT;
}

/** Marks a connection that got no answer as disposed (knex will not reuse it) and closes its socket; answers `reason`. */
export function dropConnection(connection: PgConnection, reason: Error): Error {
  connection.__knex__disposed = reason;
  connection.connection?.stream?.destroy();
  return reason;
}

const prepared = new PreparedStatements<PgConnection>();

/**
 * knex's PostgreSQL client, with one change: a statement the server never answered (the driver's
 * read time-out) drops its connection at once. Left in the pool, the connection would still wait
 * for that answer, and every statement sent on it next (a transaction's ROLLBACK, another
 * request's query) would wait behind it. Named statements are kept to
 * {@link PREPARED_PER_CONNECTION} per connection ({@link PreparedStatements}).
 */
export class PostgresClient extends KnexPgClient {
  /** The driver's connect time-out says only "timeout expired": it is named for what it is. */
  override async _acquireOnlyConnection(): Promise<PgConnection> {
    try {
      return await super._acquireOnlyConnection();
    } catch (err) {
      if (!(err instanceof Error) || !PG_CONNECT_TIMEOUT.test(err.message)) throw err;
      throw new DatabaseTimeoutError("the database did not complete a new connection within the connect time-out", { cause: err });
    }
  }

  override async _query(connection: PgConnection, obj: unknown): Promise<unknown> {
    // A transaction's ROLLBACK after a time-out: the server already ends the transaction with the connection.
    if (connection.__knex__disposed !== undefined) {
      throw new DatabaseTimeoutError("the connection was dropped after the database sent no answer within the statement time-out", { cause: connection.__knex__disposed });
    }
    try {
      const name = (obj as { options?: { name?: unknown } }).options?.name;
      if (typeof name !== "string") return await super._query(connection, obj);
      for (const evicted of prepared.use(connection, name)) await this.deallocate(connection, evicted);
      try {
        return await super._query(connection, obj);
      } catch (err) {
        // A table changed under the plan (a migration by a newer replica): prepared afresh, once.
        if ((err as { code?: string }).code !== CACHED_PLAN_CHANGED) throw err;
        await this.deallocate(connection, name);
        return await super._query(connection, obj);
      }
    } catch (err) {
      if (!isReadTimeout(err)) throw err;
      throw dropConnection(connection, new DatabaseTimeoutError("the database sent no answer within the statement time-out; the connection was dropped", { cause: err }));
    }
  }

  private async deallocate(connection: PgConnection, name: string): Promise<void> {
    prepared.forget(connection, name);
    const parsed = connection.connection?.parsedStatements;
    if (parsed === undefined || parsed[name] === undefined) return;
    await super._query(connection, { sql: `deallocate "${name}"`, bindings: [] });
    delete parsed[name];
  }
}

/** True when `knex` (or a transaction of it) talks to PostgreSQL through {@link PostgresClient}. */
export function isPostgresKnex(knex: Knex): boolean {
  return knex.client instanceof PostgresClient;
}

/** The client's members, for a knex on PostgreSQL (this client or knex's own). */
function pgClient(knex: Knex): KnexPgClientMembers {
  return knex.client as unknown as KnexPgClientMembers;
}

/** Runs `work` on a connection of `knex`'s pool (a transaction's own, inside one), released after. */
export async function withConnection<T>(knex: Knex, work: (connection: PgConnection) => Promise<T>): Promise<T> {
  const client = pgClient(knex);
  const connection = await client.acquireConnection();
  try {
    return await work(connection);
  } finally {
    await client.releaseConnection(connection);
  }
}

/** A statement written with `?` placeholders in the driver's numbering ($1, $2, …): knex's own numbering. */
export function numberPlaceholders(knex: Knex, sql: string): string {
  return pgClient(knex).positionBindings(sql);
}

/**
 * Runs `text` (numbered placeholders) as the prepared statement `name` on `connection`, the way
 * `knex.raw(…).options({ name })` runs it (through {@link PostgresClient}'s handling), without
 * knex's query builder; answers its rows.
 */
export async function queryNamed<Row>(knex: Knex, connection: PgConnection, text: string, bindings: readonly unknown[], name: string): Promise<Row[]> {
  const answer = (await pgClient(knex)._query(connection, { sql: text, bindings, options: { name } })) as { response: { rows: Row[] } };
  return answer.response.rows;
}

/**
 * knex-pglite names a delete's command `DEL` where the PostgreSQL dialect expects `DELETE`, so
 * `.del()` would answer the raw result instead of the number of rows deleted.
 */
export class EmbeddedClient extends (ClientPGLite as unknown as new (config: Knex.Config) => {
  processResponse(obj: CompiledQuery, runner: unknown): unknown;
}) {
  override processResponse(obj: CompiledQuery, runner: unknown): unknown {
    return super.processResponse(obj.method === "del" ? { ...obj, method: "delete" } : obj, runner);
  }
}

/** One private member relied on above: where it lives and how to see that it is still there. */
export interface DriverInternal {
  /** The package and member, as a failing check names it. */
  member: string;
  /** What the code above needs of it. */
  use: string;
  /** True while the member is as relied on. */
  holds(): boolean | Promise<boolean>;
}

const knexPgPrototype = KnexPgClient.prototype as unknown as Record<string, unknown>;
const knexPglitePrototype = (ClientPGLite as unknown as { prototype: Record<string, unknown> }).prototype;
const isMethod = (prototype: Record<string, unknown>, name: string) => () => typeof prototype[name] === "function";
/** A method of the class itself, not one inherited from knex's generic client (whose versions differ). */
const isOwnMethod = (prototype: Record<string, unknown>, name: string) => () => Object.hasOwn(prototype, name) && typeof prototype[name] === "function";
/** pg's wire connection of a client never connected (it opens nothing). */
const pgWire = () => (new pg.Client() as unknown as PgConnection).connection;
const pgClientSource = () => readFileSync(requireCjs.resolve("pg/lib/client.js"), "utf8");
/** knex's pool refuses a connection marked `__knex__disposed`: asked of a pool that never connects. */
async function knexRefusesDisposed(): Promise<boolean> {
  const client = new PostgresClient({ client: "pg", connection: {}, log: { warn: () => {} } }) as unknown as {
    getPoolSettings(config: object): { validate(connection: object): Promise<boolean> };
    destroy(): Promise<void>;
  };
  try {
    return (await client.getPoolSettings({}).validate({ __knex__disposed: new Error("dropped") })) === false;
  } finally {
    await client.destroy();
  }
}

/** Every private member of knex, pg and knex-pglite this file relies on (checked by test/db/driver-internals.test.ts). */
export const DRIVER_INTERNALS: readonly DriverInternal[] = [
  { member: `knex: ${KNEX_PG_CLIENT_PATH} (the PostgreSQL client class)`, use: "PostgresClient extends it", holds: () => typeof KnexPgClient === "function" },
  { member: "knex: Client_PG#_query(connection, obj)", use: "PostgresClient overrides it; queryNamed calls it", holds: isOwnMethod(knexPgPrototype, "_query") },
  { member: "knex: Client_PG#_acquireOnlyConnection()", use: "PostgresClient names the connect time-out", holds: isOwnMethod(knexPgPrototype, "_acquireOnlyConnection") },
  {
    member: "knex: Client_PG#positionBindings(sql), numbering `?` as $1, $2, …",
    use: "numberPlaceholders",
    holds: () => isOwnMethod(knexPgPrototype, "positionBindings")() && (knexPgPrototype.positionBindings as (sql: string) => string)("a = ? and b = ?") === "a = $1 and b = $2",
  },
  { member: "knex: Client#acquireConnection()", use: "withConnection (COPY, runPrepared)", holds: isMethod(knexPgPrototype, "acquireConnection") },
  { member: "knex: Client#releaseConnection(connection)", use: "withConnection (COPY, runPrepared)", holds: isMethod(knexPgPrototype, "releaseConnection") },
  { member: "knex: a pooled connection's __knex__disposed mark (Client#getPoolSettings().validate)", use: "dropConnection", holds: knexRefusesDisposed },
  { member: "pg: Client#connection.parsedStatements", use: "PostgresClient deallocates a prepared statement", holds: () => typeof pgWire()?.parsedStatements === "object" },
  { member: "pg: Client#connection.stream.destroy()", use: "dropConnection closes the socket", holds: () => typeof pgWire()?.stream?.destroy === "function" },
  { member: `pg: the read time-out's message "${PG_READ_TIMEOUT}" (lib/client.js)`, use: "isReadTimeout", holds: () => pgClientSource().includes(`'${PG_READ_TIMEOUT}'`) },
  { member: "pg: the connect time-out's message \"timeout expired\" (lib/client.js)", use: "PostgresClient names the connect time-out", holds: () => pgClientSource().includes("'timeout expired'") },
  { member: "knex-pglite: ClientPGLite#processResponse(obj, runner)", use: "EmbeddedClient overrides it", holds: isOwnMethod(knexPglitePrototype, "processResponse") },
];
