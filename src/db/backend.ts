import type { Knex } from "knex";
import type { GraphSession } from "./options.js";

/**
 * What the domain asks of the database beyond plain knex queries, which differ by backend:
 * PostgreSQL (src/db/postgres.ts) and the embedded PGlite (src/db/embedded.ts). The domain reaches
 * the one in use through src/db/storage.ts and never asks which it is.
 */
export interface Backend {
  readonly kind: "postgres" | "embedded";
  /**
   * How long one statement of background work (the rollups' reconcile) should hold the database,
   * or undefined for no bound. PostgreSQL runs statements in its own processes: the service's event
   * loop keeps turning, and one large statement is the fastest. The embedded database runs each
   * statement on the event loop's thread, in one go: such work is cut into statements of about this
   * long, the event loop turning between two (so `/health` and the other requests are answered).
   */
  readonly backgroundStatementMs: number | undefined;
  /**
   * Runs one graph walk within its limits and answers its rows. Past the time limit it rejects
   * with {@link WALK_TIMED_OUT}, past the work limit with {@link WALK_BUDGET_EXCEEDED}. PostgreSQL
   * stops a statement at its time-out: the walk runs as a prepared statement on the graph pool,
   * whose connections carry the time-out (or, for another time-out, in a transaction that sets it).
   * The embedded database cannot interrupt a statement: the walk counts the rows it visits and
   * stops itself past `maxVisits` (a work budget).
   */
  walk<Row>(session: GraphSession, walk: Walk, limits: WalkLimits): Promise<Row[]>;
  /**
   * Writes a batch of rows in the transaction `trx`, as they are, under a savepoint: true when
   * written; false, with none of them written and the transaction going on, when a row's key is
   * stored already (a unique violation, 23505). PostgreSQL COPYs the batch into the table, the
   * savepoint in the same round trip; the embedded database, which has no COPY from a client,
   * inserts it in statements of bounded size, the event loop turning between two.
   */
  appendRows(trx: Knex, batch: RowBatch): Promise<boolean>;
  /** Writes a batch of rows in the transaction `trx`, `onConflict` (an `on conflict …` clause) deciding for a key stored already. */
  upsertRows(trx: Knex, batch: RowBatch, onConflict: string): Promise<void>;
}

/** A statement and its bindings, written with `?` placeholders. */
export interface Statement {
  sql: string;
  bindings: Knex.RawBinding[];
}

/** One graph walk, in the two forms a backend may run. */
export interface Walk {
  /** The walk as one statement, bounded by the statement time-out. */
  timed(): Statement;
  /** The walk counting the rows it visits, stopping itself with {@link WALK_BUDGET_EXCEEDED} past `maxVisits`. */
  budgeted(maxVisits: number): Statement;
}

export interface WalkLimits {
  /** Longest the walk may run, where a statement can be interrupted (PostgreSQL). */
  timeoutMs: number;
  /** Most rows the walk may visit, where it cannot (the embedded database). */
  maxVisits: number;
}

/** query_canceled: a walk ran past its time limit. */
export const WALK_TIMED_OUT = "57014";
/** A walk visited more rows than its work budget allows (raised by graph_work_visit, migration 003). */
export const WALK_BUDGET_EXCEEDED = "GQ001";

/** A batch of rows for one table, in the two encodings a backend may write. */
export interface RowBatch {
  table: string;
  /** The columns, comma-separated, in the order of both encodings. */
  columns: string;
  /** How many rows. */
  size: number;
  /** The rows in COPY's binary format (src/db/copy-binary.ts), in buffers of about 64 KiB. */
  copy(): Iterable<Buffer>;
  /** Rows `[from, to)` as a `select` of bindings. */
  select(from: number, to: number): Statement;
}

/** The rows of a statement run by `knex.raw`. */
export async function rawRows<Row>(knex: Knex, statement: Statement): Promise<Row[]> {
  return ((await knex.raw(statement.sql, statement.bindings)) as { rows: Row[] }).rows;
}
