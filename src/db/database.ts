import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import knexFactory, { type Knex } from "knex";
import ClientPGLite from "knex-pglite";
import { migrate } from "./migrate.js";
import { keepStatisticsFresh } from "./statistics.js";

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
  /** statement_timeout of graph queries; default 5000 ms. */
  queryTimeoutMs?: number;
}

/**
 * Where graph queries run. On PostgreSQL, a pool of its own whose connections are opened with
 * `statement_timeout` and `join_collapse_limit = 1`, so a query is one round trip; on the
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
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Closes every connection (and releases the embedded database's lock). Safe to call twice. */
  close(): Promise<void>;
}

/** Opens the database named by the options and brings its schema up to date. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const db = options.databaseUrl !== undefined ? openPostgres(options.databaseUrl, options) : await openEmbedded(options.dataDir);
  try {
    await migrate(db.knex);
  } catch (err) {
    await db.close();
    throw err;
  }
  if (db.kind === "postgres") return db;
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

function openPostgres(url: string, options: DatabaseOptions): Database {
  const pool = (connection: Knex.PgConnectionConfig | string) =>
    knexFactory({
      client: "pg",
      connection,
      searchPath: options.schema !== undefined ? [options.schema] : undefined,
      pool: { min: 0, max: options.poolSize },
      acquireConnectionTimeout: 10_000,
      log: knexLog(options.onWarning),
    });
  const knex = pool(url);
  const timeout = Math.max(1, Math.floor(options.queryTimeoutMs ?? 5000));
  const graph = pool({ connectionString: url, options: `-c statement_timeout=${timeout} -c join_collapse_limit=1` });
  return wrap(knex, "postgres", async () => graph.destroy(), { knex: graph, presetTimeoutMs: timeout });
}

async function openEmbedded(dataDir: string): Promise<Database> {
  if (dataDir.startsWith("memory://")) {
    const pglite = await PGlite.create();
    const knex = embeddedKnex(pglite);
    return wrap(knex, "embedded", async () => {}, { knex, presetTimeoutMs: undefined, workBudget: true });
  }
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const releaseLock = lockDataDir(dir);
  try {
    const pglite = await PGlite.create(join(dir, "pgdata"));
    const knex = embeddedKnex(pglite);
    return wrap(knex, "embedded", async () => releaseLock(), { knex, presetTimeoutMs: undefined, workBudget: true });
  } catch (err) {
    releaseLock();
    throw err;
  }
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

function wrap(knex: Knex, kind: Database["kind"], afterClose: () => Promise<void>, graph: GraphSession): Database {
  let closing: Promise<void> | undefined;
  return {
    knex,
    graph,
    kind,
    async ping() {
      await knex.raw("select 1");
    },
    close() {
      closing ??= knex.destroy().then(afterClose);
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
