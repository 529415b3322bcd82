/**
 * The bounds put on every PostgreSQL connection, so that a database that is down, frozen or cut
 * off mid-answer costs a caller a bounded wait and a 503, never a hang. The embedded database runs
 * in the process and has no connection to lose: there only the probe time-out applies (and the
 * graph queries' work budget, migration 003).
 */
export interface DatabaseTimeouts {
  /** Opening a connection, TCP and PostgreSQL's start-up exchange (DATABASE_CONNECT_TIMEOUT_MS). */
  connectMs: number;
  /** Waiting for a free connection of the pool (DATABASE_ACQUIRE_TIMEOUT_MS). */
  acquireMs: number;
  /**
   * Longest one statement may run (DATABASE_STATEMENT_TIMEOUT_MS): PostgreSQL's `statement_timeout`
   * on every connection, and the driver's own read time-out {@link READ_TIMEOUT_MARGIN_MS} later,
   * which also holds when the server does not answer at all.
   */
  statementMs: number;
  /** An unused pooled connection is closed after this long (DATABASE_IDLE_TIMEOUT_MS). */
  idleMs: number;
  /** A transaction left idle this long is ended by PostgreSQL (DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS); 0: never. */
  idleInTransactionMs: number;
  /** TCP keepalive: first probe after this much silence (DATABASE_KEEPALIVE_MS); 0: off. */
  keepAliveMs: number;
  /** Longest the database check of /health and /ready waits (DATABASE_PROBE_TIMEOUT_MS). */
  probeMs: number;
  /** How long start-up retries a database that cannot be reached before giving up (DATABASE_STARTUP_TIMEOUT_MS). */
  startupMs: number;
}

/** QUERY_TIMEOUT_MS: the statement time-out of graph queries, unless configured. */
export const DEFAULT_QUERY_TIMEOUT_MS = 5000;

export const DEFAULT_DATABASE_TIMEOUTS: Readonly<DatabaseTimeouts> = {
  connectMs: 5000,
  acquireMs: 10_000,
  statementMs: 30_000,
  idleMs: 30_000,
  idleInTransactionMs: 60_000,
  keepAliveMs: 10_000,
  probeMs: 800,
  startupMs: 60_000,
};

/**
 * The driver gives up on an answer this long after the statement time-out: PostgreSQL's own
 * cancellation (a clear error) comes first whenever the server still answers.
 */
export const READ_TIMEOUT_MARGIN_MS = 500;

/** Thrown when the database sent no answer in time: the connection it was on is dropped. */
export class DatabaseTimeoutError extends Error {
  readonly code = "ETIMEDOUT";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DatabaseTimeoutError";
  }
}
