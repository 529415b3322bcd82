import type { Knex } from "knex";
import { isUniqueViolation } from "../errors.js";
import { rawRows, type Backend, type RowBatch, type Walk, type WalkLimits } from "./backend.js";
import { copyLines } from "./copy.js";
import { assembleDatabase, boundedPing } from "./lifecycle.js";
import { migrateWhenReachable } from "./migrate-on-start.js";
import { postgresNotifications } from "./notifications.js";
import type { Database, DatabaseOptions, GraphSession } from "./options.js";
import { GRAPH_SESSION_SETTINGS, postgresPool } from "./pools.js";
import { runPrepared } from "./prepared.js";
import { DEFAULT_QUERY_TIMEOUT_MS, type DatabaseTimeouts } from "./timeouts.js";

/** Opens the PostgreSQL at `url`, once its schema is brought up to date. */
export async function openPostgres(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts): Promise<Database> {
  await migrateWhenReachable(url, options, timeouts);
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
  return assembleDatabase(
    knex,
    "postgres",
    async () => void (await Promise.all([graph.destroy(), probe.destroy()])),
    { knex: graph, presetTimeoutMs: timeout },
    boundedPing(() => probe.raw("select 1"), timeouts.probeMs),
    notifications,
  );
}

/** PostgreSQL: statement time-outs, prepared statements, COPY. */
export const postgresBackend: Backend = {
  kind: "postgres",
  backgroundStatementMs: undefined,

  async walk<Row>(session: GraphSession, walk: Walk, limits: WalkLimits): Promise<Row[]> {
    const run = walk.timed();
    if (session.presetTimeoutMs === limits.timeoutMs) {
      // The pool's connections carry statement_timeout and the planner settings
      // (GRAPH_SESSION_SETTINGS): one round trip, of a statement prepared and planned once per connection.
      return runPrepared<Row>(session.knex, run.sql, run.bindings);
    }
    return session.knex.transaction(async (trx) => {
      // join_collapse_limit = 1: PostgreSQL keeps the join order the compiler wrote (and skips
      // searching for another: planning a 13-relation walk otherwise takes longer than running it).
      await trx.raw("select set_config('statement_timeout', ?, true), set_config('join_collapse_limit', '1', true)", [`${Math.max(1, Math.floor(limits.timeoutMs))}ms`]);
      return rawRows<Row>(trx, run);
    });
  },

  // COPY writes a page of rows per WAL record, INSERT one record per row. The savepoint, the COPY
  // and the release travel as one simple query (the server runs its statements in turn, the COPY
  // taking the data in between): one round trip a batch instead of three.
  async appendRows(trx: Knex, batch: RowBatch) {
    try {
      await copyLines(trx, `savepoint append_rows; copy ${batch.table} (${batch.columns}) from stdin with (format binary); release savepoint append_rows`, batch.copy());
      return true;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      await trx.raw("rollback to savepoint append_rows; release savepoint append_rows");
      return false;
    }
  },

  // COPY into a temporary staging table, then one INSERT … SELECT … ON CONFLICT from it.
  async upsertRows(trx: Knex, batch: RowBatch, onConflict: string) {
    const staging = `${batch.table}_staging`;
    await trx.raw(`create temporary table if not exists ${staging} (like ${batch.table}) on commit drop`);
    await trx.raw(`truncate ${staging}`);
    await copyLines(trx, `copy ${staging} (${batch.columns}) from stdin with (format binary)`, batch.copy());
    await trx.raw(`insert into ${batch.table} (${batch.columns}) select ${batch.columns} from ${staging} ${onConflict}`);
  },
};
