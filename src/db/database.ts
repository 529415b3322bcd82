import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { PGlite } from "@electric-sql/pglite";
import knexFactory, { type Knex } from "knex";
import ClientPGLite from "knex-pglite";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { pgliteParsers, pgTypes } from "./json-types.js";
import { migrate } from "./migrate.js";
import { embeddedNotifications, postgresNotifications, type NotificationSource } from "./notifications.js";
import { keepStatisticsFresh } from "./statistics.js";
import { DatabaseTimeoutError, DEFAULT_DATABASE_TIMEOUTS, DEFAULT_QUERY_TIMEOUT_MS, READ_TIMEOUT_MARGIN_MS, type DatabaseTimeouts } from "./timeouts.js";
import { isPassingFault } from "../errors.js";
import { redactUrl } from "../secrets.js";

export interface DatabaseOptions {
  /** PostgreSQL connection string; absent means the embedded PostgreSQL. */
  databaseUrl: string | undefined;
  /** Directory of the embedded database, or `memory://` for one that lives in memory. */
  dataDir: string;
  poolSize: number;
  /** Schema to work in (PostgreSQL only); default `public`. */
  schema?: string;
  /** Where knex's own warnings go (a failed connection attempt, say); default: nowhere. */
  onWarning?: (message: string) => void;
  /** statement_timeout of graph queries (QUERY_TIMEOUT_MS); default 5000 ms. */
  queryTimeoutMs?: number;
  /** Connection, statement, idle and start-up bounds (PostgreSQL); default {@link DEFAULT_DATABASE_TIMEOUTS}. */
  timeouts?: Partial<DatabaseTimeouts>;
}

/**
 * Where graph queries run. On PostgreSQL, a pool of its own whose connections are opened with
 * `statement_timeout` and `join_collapse_limit = 1`, so a query is one round trip (plans are left to
 * PostgreSQL's `plan_cache_mode = auto`: forced generic plans were tried and planned for the average
 * tenant, a sequential scan over all tenants for a small one); on the
 * embedded database, the one connection, with the settings made per query in a transaction.
 */
export interface GraphSession {
  knex: Knex;
  /** The statement_timeout the connections already carry (with join_collapse_limit = 1); undefined when none. */
  presetTimeoutMs: number | undefined;
  /**
   * True where a statement cannot be interrupted (the embedded database ignores
   * statement_timeout): a query then runs with a bound on the rows it visits instead.
   */
  workBudget?: boolean;
}

export interface Database {
  knex: Knex;
  graph: GraphSession;
  kind: "postgres" | "embedded";
  /** `LISTEN` on a connection of its own (live streams): shared by every process on one PostgreSQL. */
  notifications: NotificationSource;
  /**
   * Resolves when the database answers a trivial query within the probe time-out; rejects with the
   * reason otherwise. Probes in flight at once share one query, on a connection of their own (PostgreSQL).
   */
  ping(): Promise<void>;
  /** Closes every connection (and releases the embedded database's lock). Safe to call twice. */
  close(): Promise<void>;
}

/** Opens the database named by the options and brings its schema up to date. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  if (options.databaseUrl !== undefined) {
    await migrateWhenReachable(options.databaseUrl, options, timeouts);
    return openPostgres(options.databaseUrl, options, timeouts);
  }
  const db = await openEmbedded(options.dataDir, timeouts.probeMs);
  try {
    await migrate(db.knex);
  } catch (err) {
    await db.close();
    throw err;
  }
  // The embedded database has no autovacuum: statistics at start, and again after bulk writes.
  const statistics = keepStatisticsFresh(db.knex, (err) => options.onWarning?.(`ANALYZE failed: ${err instanceof Error ? err.message : String(err)}`));
  try {
    await statistics.analyze();
  } catch (err) {
    await db.close();
    throw err;
  }
  const close = db.close;
  let closing: Promise<void> | undefined;
  return {
    ...db,
    close() {
      closing ??= statistics.stop().then(close);
      return closing;
    },
  };
}

function knexLog(onWarning: ((message: string) => void) | undefined): Knex.Config["log"] {
  const report = (message: unknown) => onWarning?.(message instanceof Error ? message.message : String(message));
  return { warn: report, error: report, deprecate: report, debug: () => {} };
}

const requireCjs = createRequire(import.meta.url);
interface PgConnection {
  connection?: { stream?: { destroy(): void }; parsedStatements?: Record<string, string> };
  __knex__disposed?: unknown;
}
const KnexPgClient = requireCjs("knex/lib/dialects/postgres/index.js") as new (config: Knex.Config) => {
  _query(connection: PgConnection, obj: unknown): Promise<unknown>;
  _acquireOnlyConnection(): Promise<PgConnection>;
};

/** True when `knex` (or a transaction of it) talks to PostgreSQL through the driver, not to the embedded database. */
export function isPostgresKnex(knex: Knex): boolean {
  return knex.client instanceof PostgresClient;
}

/**
 * Streams `lines` into `COPY … FROM STDIN` on the connection of `knex` (a transaction's own, inside
 * one). Returns false, copying nothing, on the embedded database, which has no COPY from a client.
 */
export async function copyFromStdin(knex: Knex, statement: string, lines: Iterable<string>): Promise<boolean> {
  if (!isPostgresKnex(knex)) return false;
  const client = knex.client as unknown as { acquireConnection(): Promise<CopyConnection>; releaseConnection(c: CopyConnection): Promise<void> };
  const connection = await client.acquireConnection();
  try {
    await boundedCopy(connection, statement, lines);
  } finally {
    await client.releaseConnection(connection);
  }
  return true;
}

type CopyConnection = pg.ClientBase & PgConnection;

/**
 * `COPY … FROM STDIN` on the connection of a transaction. The driver holds COPY to the read
 * time-out as any statement, but leaves the connection as it was: the transaction's ROLLBACK then
 * waited a second read time-out behind the lost answer (a CI run saw a frozen database cost twice
 * the bound). Here, as in {@link PostgresClient}, a COPY that got no answer drops its connection.
 */
async function boundedCopy(connection: CopyConnection, statement: string, lines: Iterable<string>): Promise<void> {
  try {
    await pipeline(Readable.from(lines), connection.query(copyFrom(statement)));
  } catch (err) {
    if (!isReadTimeout(err)) throw err;
    throw dropConnection(connection, new DatabaseTimeoutError("the database sent no answer to COPY within the statement time-out; the connection was dropped", { cause: err }));
  }
}

/** The driver's read time-out: the server sent nothing for `query_timeout` ms. */
function isReadTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === "Query read timeout";
}

/** Marks a connection that got no answer as disposed (knex will not reuse it) and closes its socket; answers `reason`. */
function dropConnection(connection: PgConnection, reason: Error): Error {
  connection.__knex__disposed = reason;
  connection.connection?.stream?.destroy();
  return reason;
}

/**
 * knex's PostgreSQL client, with one change: a statement the server never answered (the driver's
 * read time-out) drops its connection at once. Left in the pool, the connection would still wait
 * for that answer, and every statement sent on it next (a transaction's ROLLBACK, another
 * request's query) would wait behind it.
 */
class PostgresClient extends KnexPgClient {
  /** The driver's connect time-out says only "timeout expired": it is named for what it is. */
  override async _acquireOnlyConnection(): Promise<PgConnection> {
    try {
      return await super._acquireOnlyConnection();
    } catch (err) {
      if (!(err instanceof Error) || !/^timeout expired$|connection timeout/i.test(err.message)) throw err;
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
      await this.makeRoom(connection, name);
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

  /**
   * Each connection keeps at most {@link PREPARED_PER_CONNECTION} prepared statements, the most
   * recently used: a statement beyond them makes room by deallocating the least recently used
   * (PostgreSQL keeps a prepared statement's plan for the connection's life otherwise).
   */
  private async makeRoom(connection: PgConnection, name: string): Promise<void> {
    let names = prepared.get(connection);
    if (names === undefined) prepared.set(connection, (names = new Set()));
    if (names.delete(name)) {
      names.add(name);
      return;
    }
    while (names.size >= PREPARED_PER_CONNECTION) await this.deallocate(connection, names.values().next().value!);
    names.add(name);
  }

  private async deallocate(connection: PgConnection, name: string): Promise<void> {
    prepared.get(connection)?.delete(name);
    const parsed = connection.connection?.parsedStatements;
    if (parsed === undefined || parsed[name] === undefined) return;
    await super._query(connection, { sql: `deallocate "${name}"`, bindings: [] });
    delete parsed[name];
  }
}

/** A prepared statement whose result type changed since it was planned (feature_not_supported). */
const CACHED_PLAN_CHANGED = "0A000";
/** Prepared statements a connection keeps (each holds its plan on the server). */
export const PREPARED_PER_CONNECTION = 64;
/** The names each connection prepared, least recently used first. */
const prepared = new WeakMap<PgConnection, Set<string>>();
const preparedNames = new Map<string, string>();

/**
 * The name a statement is prepared under on the driver's connections: the statement's text,
 * hashed. A named statement is parsed once per connection, and on the graph pool planned once too
 * (see the graph pool's settings in openPostgres). Only statements run outside a transaction take
 * names (see {@link PostgresClient}).
 */
export function preparedName(sql: string): string {
  let name = preparedNames.get(sql);
  if (name === undefined) {
    name = `p_${createHash("sha256").update(sql).digest("hex").slice(0, 32)}`;
    if (preparedNames.size >= 10_000) preparedNames.clear();
    preparedNames.set(sql, name);
  }
  return name;
}

/** The driver's text of a statement written with `?` placeholders ($1, $2, …), by that statement. */
const positionedTexts = new Map<string, string>();

interface QueryingClient {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
  positionBindings(sql: string): string;
  _query(connection: PgConnection, obj: { sql: string; bindings: readonly unknown[]; options: { name: string } }): Promise<{ response: { rows: unknown[] } }>;
}

/**
 * Runs a statement written with `?` placeholders as the named prepared statement
 * {@link preparedName} gives it, on a connection of `knex`'s pool (PostgreSQL only; see
 * {@link isPostgresKnex}), and answers its rows. It goes the way `knex.raw(…).options({ name })`
 * goes — the pool, its acquire time-out, {@link PostgresClient}'s handling of a lost answer and
 * its bound on prepared statements — without knex's query builder, whose work on the text at every
 * run (placing the bindings, numbering the placeholders) cost ~0.2 ms on the walk of every API
 * request. The text is numbered once, by knex's own numbering. Not for a statement inside a
 * transaction, nor one that writes (knex's query events are not emitted).
 */
export async function runPrepared<Row>(knex: Knex, sql: string, bindings: readonly unknown[]): Promise<Row[]> {
  const client = knex.client as unknown as QueryingClient;
  let text = positionedTexts.get(sql);
  if (text === undefined) {
    if (/\\\?|\?\?/.test(sql)) throw new Error("runPrepared takes plain `?` placeholders only (no `??` identifiers, no escaped `\\?`)");
    text = client.positionBindings(sql);
    if (positionedTexts.size >= 10_000) positionedTexts.clear();
    positionedTexts.set(sql, text);
  }
  const connection = await client.acquireConnection();
  try {
    return (await client._query(connection, { sql: text, bindings, options: { name: preparedName(sql) } })).response.rows as Row[];
  } finally {
    await client.releaseConnection(connection);
  }
}


interface PgSettings {
  /** PostgreSQL's statement_timeout, ms; the driver's read time-out is READ_TIMEOUT_MARGIN_MS later. */
  statementMs: number;
  /** Further run-time parameters, as `-c name=value` options. */
  options?: string;
  poolSize: number;
  acquireMs: number;
}

/** A knex pool on PostgreSQL whose connections carry every bound of {@link DatabaseTimeouts}. */
function postgresPool(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts, settings: PgSettings): Knex {
  const connection = {
    connectionString: url,
    connectionTimeoutMillis: timeouts.connectMs,
    keepAlive: timeouts.keepAliveMs > 0,
    keepAliveInitialDelayMillis: timeouts.keepAliveMs,
    statement_timeout: settings.statementMs,
    // No statement time-out (migrations): no read time-out either.
    ...(settings.statementMs > 0 ? { query_timeout: settings.statementMs + READ_TIMEOUT_MARGIN_MS } : {}),
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs,
    application_name: "process-task-backend",
    // json and jsonb read by parseJson (README "Known defect of the runtime").
    types: pgTypes,
    ...(settings.options !== undefined ? { options: settings.options } : {}),
  };
  return knexFactory({
    client: PostgresClient as unknown as typeof knexFactory.Client,
    connection: connection as Knex.PgConnectionConfig,
    searchPath: options.schema !== undefined ? [options.schema] : undefined,
    pool: { min: 0, max: settings.poolSize, idleTimeoutMillis: timeouts.idleMs, createTimeoutMillis: timeouts.connectMs + READ_TIMEOUT_MARGIN_MS },
    acquireConnectionTimeout: settings.acquireMs,
    log: knexLog(options.onWarning),
  });
}

/**
 * The run-time settings of the graph pool's connections (see openPostgres), as `-c` options. No
 * parallel workers and no JIT: a plan made once is costed without the caller's values (an
 * attribute lookup at 1 % of the table), and on a large table those costs made PostgreSQL start a
 * worker, or compile code, at every run of a walk that reads a few pages (35 ms instead of 1.9 ms
 * for the example on 290,000 entities; a worker started per outer row of a nested loop took one
 * walk past its time-out).
 */
export const GRAPH_SESSION_SETTINGS =
  "-c join_collapse_limit=1 -c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c max_parallel_workers_per_gather=0 -c jit=off";

function openPostgres(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts): Database {
  const knex = postgresPool(url, options, timeouts, { statementMs: timeouts.statementMs, poolSize: options.poolSize, acquireMs: timeouts.acquireMs });
  const timeout = Math.max(1, Math.floor(options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS));
  // Graph queries: statement_timeout is the graph query time-out (QUERY_TIMEOUT_MS), answered 422.
  // The walks run on plans made once per statement and connection (force_generic_plan), which
  // planning at every run cost more than running (0.65 of ~1.3 ms for the example). Such a plan
  // is made without the tenant or the caller's values, so nothing in it may depend on them: the
  // compiler fixes the join order (join_collapse_limit = 1) and finds entities by attributes
  // through the tenant-scoped index alone; enable_seqscan = off keeps a type-only lookup on the
  // tenant's index range rather than a scan of every tenant's rows; no parallel workers, no JIT
  // (GRAPH_SESSION_SETTINGS). test/db/plan-safety.test.ts holds these plans to the reads of the
  // best custom plan, tenant by tenant.
  const graph = postgresPool(url, options, timeouts, {
    statementMs: timeout,
    options: GRAPH_SESSION_SETTINGS,
    poolSize: options.poolSize,
    acquireMs: timeouts.acquireMs,
  });
  // /health and /ready probe on a connection of their own, so that they answer while the pool is
  // exhausted and never take a connection from the requests.
  const probe = postgresPool(url, options, { ...timeouts, connectMs: timeouts.probeMs }, { statementMs: timeouts.probeMs, poolSize: 1, acquireMs: timeouts.probeMs });
  const notifications = postgresNotifications(url, timeouts.connectMs, options.onWarning);
  return wrap(
    knex,
    "postgres",
    async () => void (await Promise.all([graph.destroy(), probe.destroy()])),
    { knex: graph, presetTimeoutMs: timeout },
    boundedPing(() => probe.raw("select 1"), timeouts.probeMs),
    notifications,
  );
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** The message of an error, or its code where the message is empty (a refused connection to every address of a host). */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.message !== "") return err.message;
  const code = (err as { code?: unknown }).code;
  const inner = err instanceof AggregateError ? err.errors.map(errorText).filter((m) => m !== "") : [];
  return inner[0] ?? (typeof code === "string" ? code : err.name);
}

/**
 * Brings the schema up to date on a connection of its own, without the statement time-out (a
 * migration may build an index on a large table, or wait for another process's migration).
 * While the database cannot be reached (refused, not answering, starting up), it tries again with
 * a doubling back-off (250 ms to 5 s) until DATABASE_STARTUP_TIMEOUT_MS has passed; then, or at
 * once for any other failure (a wrong password, a missing database), it fails with a message that
 * names the database and the last error.
 */
async function migrateWhenReachable(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts): Promise<void> {
  const started = Date.now();
  const where = redactUrl(url);
  for (let attempt = 1, delay = 250; ; attempt++, delay = Math.min(delay * 2, 5000)) {
    const knex = postgresPool(url, { ...options, onWarning: undefined }, timeouts, { statementMs: 0, poolSize: 1, acquireMs: timeouts.connectMs + READ_TIMEOUT_MARGIN_MS });
    try {
      await migrate(knex);
      return;
    } catch (err) {
      if (!isPassingFault(err)) throw new Error(`the database ${where} failed at start: ${errorText(err)}`, { cause: err });
      const elapsed = Date.now() - started;
      if (elapsed + delay > timeouts.startupMs) {
        throw new Error(
          `the database ${where} could not be reached within ${timeouts.startupMs} ms (DATABASE_STARTUP_TIMEOUT_MS, ${attempt} attempts); last error: ${errorText(err)}`,
          { cause: err },
        );
      }
      options.onWarning?.(`the database ${where} cannot be reached (attempt ${attempt}): ${errorText(err)}; trying again in ${delay} ms`);
      await sleep(delay);
    } finally {
      await knex.destroy();
    }
  }
}

/** A connection string without its password (nor credential parameters), fit for a log line or a message. */
export { redactUrl };

/**
 * A ping that answers within `timeoutMs` whatever the database does. Pings asked for while one is
 * in flight share it, so a frozen database never piles probes up.
 */
function boundedPing(check: () => Promise<unknown>, timeoutMs: number): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  return () => {
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new DatabaseTimeoutError(`the database did not answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([check(), late]);
      } finally {
        clearTimeout(timer);
        inFlight = undefined;
      }
    })();
    return inFlight;
  };
}

async function openEmbedded(dataDir: string, probeMs: number): Promise<Database> {
  if (dataDir.startsWith("memory://")) {
    const pglite = await PGlite.create({ parsers: pgliteParsers });
    const knex = embeddedKnex(pglite);
    return wrap(knex, "embedded", async () => {}, { knex, presetTimeoutMs: undefined, workBudget: true }, embeddedPing(pglite, probeMs), embeddedNotifications(pglite));
  }
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const releaseLock = lockDataDir(dir);
  try {
    const pglite = await PGlite.create(join(dir, "pgdata"), { parsers: pgliteParsers });
    const knex = embeddedKnex(pglite);
    return wrap(knex, "embedded", async () => releaseLock(), { knex, presetTimeoutMs: undefined, workBudget: true }, embeddedPing(pglite, probeMs), embeddedNotifications(pglite));
  } catch (err) {
    releaseLock();
    throw err;
  }
}

/**
 * The embedded database's probe. PGlite has one session, which knex holds for a whole transaction:
 * a probe through knex waited for the end of any upload in progress (issue 24: `/health` 3.4 s
 * under a bulk upload). The probe asks PGlite itself, which runs it between two statements of the
 * transaction (the uploads write in statements of a bounded size: src/timeseries/ingest.ts). It may
 * run inside that transaction: `select 1` changes nothing there, and a transaction that has failed
 * answers it with "current transaction is aborted" (25P02) — an answer all the same.
 */
function embeddedPing(pglite: PGlite, timeoutMs: number): () => Promise<void> {
  return boundedPing(async () => {
    try {
      await pglite.query("select 1");
    } catch (err) {
      if ((err as { code?: unknown }).code !== "25P02") throw err;
    }
  }, timeoutMs);
}

interface CompiledQuery {
  method?: string;
  [key: string]: unknown;
}

/**
 * knex-pglite names a delete's command `DEL` where the PostgreSQL dialect expects `DELETE`, so
 * `.del()` would answer the raw result instead of the number of rows deleted.
 */
class EmbeddedClient extends (ClientPGLite as unknown as new (config: Knex.Config) => {
  processResponse(obj: CompiledQuery, runner: unknown): unknown;
}) {
  override processResponse(obj: CompiledQuery, runner: unknown): unknown {
    return super.processResponse(obj.method === "del" ? { ...obj, method: "delete" } : obj, runner);
  }
}

function embeddedKnex(pglite: PGlite): Knex {
  // knex-pglite keeps the single connection PGlite has; knex queues queries on it.
  return knexFactory({
    client: EmbeddedClient as unknown as typeof knexFactory.Client,
    connection: { pglite } as Knex.StaticConnectionConfig,
  });
}

function wrap(
  knex: Knex,
  kind: Database["kind"],
  afterClose: () => Promise<void>,
  graph: GraphSession,
  ping: () => Promise<void>,
  notifications: NotificationSource,
): Database {
  let closing: Promise<void> | undefined;
  return {
    knex,
    graph,
    kind,
    ping,
    notifications,
    close() {
      closing ??= notifications
        .close()
        .then(() => knex.destroy())
        .then(afterClose);
      return closing;
    },
  };
}

/**
 * The embedded database is one process's: two processes writing the same files would corrupt
 * them. A lock file holding the owner's pid keeps a second process out; a lock left by a process
 * that no longer runs is taken over.
 */
function lockDataDir(dir: string): () => void {
  const lockFile = join(dir, "service.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: "wx" });
      return () => rmSync(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const owner = Number(readFileSync(lockFile, "utf8").trim());
      if (Number.isInteger(owner) && owner > 0 && isRunning(owner)) {
        throw new Error(
          `DATA_DIR ${dir} is in use by process ${owner}; stop that process or choose another DATA_DIR (or set DATABASE_URL)`,
          { cause: err },
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`could not take the lock on DATA_DIR ${dir}`);
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
