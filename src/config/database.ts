import { checkedText, integer, isUrl, setting, text, type Group, type Values } from "./setting.js";

export const databaseSettings = {
  databaseUrl: setting({
    env: "DATABASE_URL",
    kind: checkedText((v) => isUrl(v, ["postgres:", "postgresql:"]), "must be a URL like postgres://user@host:5432/database", "`postgres://` or `postgresql://` URL"),
    secret: "password",
    absent: "the embedded PostgreSQL (PGlite) under `DATA_DIR`",
    doc: "PostgreSQL connection string.",
  }),
  dataDir: setting({ env: "DATA_DIR", kind: text, default: "./data", doc: "Where the embedded database keeps its files; `memory://` keeps it in memory." }),
  databasePoolSize: setting({
    env: "DATABASE_POOL_SIZE",
    kind: integer(1, 200),
    default: 10,
    doc: "Connections of each of the service's two PostgreSQL pools, the graph walks having their own.",
    notes: "More connections than the database has cores cost it more CPU per statement (Benchmarks, request path).",
  }),
};

/**
 * The driver gives up on an answer this long after the statement time-out: PostgreSQL's own
 * cancellation (a clear error) comes first whenever the server still answers.
 */
export const READ_TIMEOUT_MARGIN_MS = 500;

/**
 * The bounds put on every PostgreSQL connection, so that a database that is down, frozen or cut
 * off mid-answer costs a caller a bounded wait and a 503, never a hang. The embedded database runs
 * in the process and has no connection to lose: there only the probe time-out applies (and the
 * graph queries' work budget, migration 003).
 */
export const databaseTimeoutSettings = {
  connectMs: setting({
    env: "DATABASE_CONNECT_TIMEOUT_MS",
    kind: integer(100, 600_000, "ms"),
    default: 5000,
    doc: "Longest opening a PostgreSQL connection may take, TCP and PostgreSQL's start-up exchange.",
  }),
  acquireMs: setting({ env: "DATABASE_ACQUIRE_TIMEOUT_MS", kind: integer(100, 600_000, "ms"), default: 10_000, doc: "Longest a request waits for a free connection of the pool." }),
  statementMs: setting({
    env: "DATABASE_STATEMENT_TIMEOUT_MS",
    kind: integer(100, 3_600_000, "ms"),
    default: 30_000,
    doc: "Longest one statement may run: PostgreSQL's `statement_timeout` on every connection.",
    notes: `The driver gives up ${READ_TIMEOUT_MARGIN_MS} ms later if no answer came at all (a frozen server); the connection is then dropped.`,
  }),
  idleMs: setting({ env: "DATABASE_IDLE_TIMEOUT_MS", kind: integer(100, 3_600_000, "ms"), default: 30_000, doc: "An unused pooled connection is closed after this long." }),
  idleInTransactionMs: setting({
    env: "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS",
    kind: integer(0, 3_600_000, "ms"),
    default: 60_000,
    doc: "PostgreSQL ends a transaction left idle this long (`idle_in_transaction_session_timeout`); `0`: never.",
    notes: "For instance an upload whose client stopped sending.",
  }),
  keepAliveMs: setting({
    env: "DATABASE_KEEPALIVE_MS",
    kind: integer(0, 3_600_000, "ms"),
    default: 10_000,
    doc: "TCP keepalive on every connection: first probe after this much silence; `0`: off.",
  }),
  probeMs: setting({
    env: "DATABASE_PROBE_TIMEOUT_MS",
    kind: integer(50, 900, "ms"),
    default: 800,
    doc: "Longest the database check of `/health` and `/ready` waits (at most 900, so they answer within a second).",
  }),
  startupMs: setting({
    env: "DATABASE_STARTUP_TIMEOUT_MS",
    kind: integer(0, 3_600_000, "ms"),
    default: 60_000,
    doc: "At start, how long a database that cannot be reached is tried again before the process exits 1.",
    notes: "The back-off starts at 250 ms and doubles up to 5 s.",
  }),
};

/** Bounds of the database connections (DATABASE_*_TIMEOUT_MS, DATABASE_KEEPALIVE_MS). */
export type DatabaseTimeouts = Values<typeof databaseTimeoutSettings>;

export const databaseGroup: Group = { title: "Database", settings: { ...databaseSettings, ...databaseTimeoutSettings } };
