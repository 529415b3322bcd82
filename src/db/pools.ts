import knexFactory, { type Knex } from "knex";
import { PostgresClient } from "./driver-patches.js";
import { pgTypes } from "./json-types.js";
import type { DatabaseOptions } from "./options.js";
import { READ_TIMEOUT_MARGIN_MS, type DatabaseTimeouts } from "./timeouts.js";
import { errorText } from "../errors.js";

/** knex's own log lines (a failed connection attempt, say), to `onWarning`. */
export function knexLog(onWarning: ((message: string) => void) | undefined): Knex.Config["log"] {
  const report = (message: unknown) => onWarning?.(errorText(message));
  return { warn: report, error: report, deprecate: report, debug: () => {} };
}

export interface PgSettings {
  /** PostgreSQL's statement_timeout, ms; the driver's read time-out is READ_TIMEOUT_MARGIN_MS later. */
  statementMs: number;
  /** Further run-time parameters, as `-c name=value` options. */
  options?: string;
  poolSize: number;
  acquireMs: number;
}

/** A knex pool on PostgreSQL whose connections carry every bound of {@link DatabaseTimeouts}. */
export function postgresPool(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts, settings: PgSettings): Knex {
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
