import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { setImmediate } from "node:timers/promises";
import { PGlite } from "@electric-sql/pglite";
import knexFactory, { type Knex } from "knex";
import { rawRows, type Backend, type RowBatch, type Walk, type WalkLimits } from "./backend.js";
import { lockDataDir } from "./data-dir-lock.js";
import { EmbeddedClient } from "./driver-patches.js";
import { pgliteParsers } from "./json-types.js";
import { assembleDatabase, boundedPing } from "./lifecycle.js";
import { migrate } from "./migrate.js";
import { embeddedNotifications } from "./notifications.js";
import type { Database, DatabaseOptions, GraphSession } from "./options.js";
import { keepStatisticsFresh } from "./statistics.js";
import { errorText, isUniqueViolation } from "../errors.js";

/**
 * Rows per statement on the embedded database. PGlite runs a statement on this thread, in one go: a
 * batch of 5,000 rows held it 100–400 ms (up to 0.8 s measured on a loaded machine), and `/health`
 * with it (issue 24). A statement of 1,000 rows holds it 20–80 ms (at most 0.2 s measured there);
 * the event loop turns between two. Smaller statements cost throughput (500 rows: about a fifth).
 */
export const EMBEDDED_STATEMENT_ROWS = 1000;

/**
 * How long a statement of background work holds the embedded database ({@link Backend.backgroundStatementMs}):
 * about an upload statement's time. A reconcile of four days of 1-second events in one statement held
 * it about 1 s on a loaded machine, and `/health` waited as long.
 */
export const EMBEDDED_BACKGROUND_STATEMENT_MS = 50;

/** Opens the embedded database in `options.dataDir` (or in memory), brings its schema up to date and keeps its statistics fresh. */
export async function openEmbedded(options: DatabaseOptions, probeMs: number): Promise<Database> {
  const db = await openPglite(options.dataDir, probeMs);
  try {
    await migrate(db.knex);
  } catch (err) {
    await db.close();
    throw err;
  }
  // The embedded database has no autovacuum: statistics at start, and again after bulk writes.
  const statistics = keepStatisticsFresh(db.knex, (err) => options.onWarning?.(`ANALYZE failed: ${errorText(err)}`));
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

async function openPglite(dataDir: string, probeMs: number): Promise<Database> {
  if (dataDir.startsWith("memory://")) {
    const pglite = await PGlite.create({ parsers: pgliteParsers });
    const knex = embeddedKnex(pglite);
    return assembleDatabase(knex, "embedded", async () => {}, { knex, presetTimeoutMs: undefined }, embeddedPing(pglite, probeMs), embeddedNotifications(pglite));
  }
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const releaseLock = lockDataDir(dir);
  try {
    const pglite = await PGlite.create(join(dir, "pgdata"), { parsers: pgliteParsers });
    const knex = embeddedKnex(pglite);
    return assembleDatabase(knex, "embedded", async () => releaseLock(), { knex, presetTimeoutMs: undefined }, embeddedPing(pglite, probeMs), embeddedNotifications(pglite));
  } catch (err) {
    releaseLock();
    throw err;
  }
}

/**
 * The embedded database's probe. PGlite has one session, which knex holds for a whole transaction:
 * a probe through knex waited for the end of any upload in progress (issue 24: `/health` 3.4 s
 * under a bulk upload). The probe asks PGlite itself, which runs it between two statements of the
 * transaction (the uploads write in statements of {@link EMBEDDED_STATEMENT_ROWS} rows). It may
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

function embeddedKnex(pglite: PGlite): Knex {
  // knex-pglite keeps the single connection PGlite has; knex queues queries on it.
  return knexFactory({
    client: EmbeddedClient as unknown as typeof knexFactory.Client,
    connection: { pglite } as Knex.StaticConnectionConfig,
  });
}

/** Writes the batch in statements of {@link EMBEDDED_STATEMENT_ROWS} rows, the event loop turning between them. */
async function insertInSlices(trx: Knex, batch: RowBatch, onConflict: string): Promise<void> {
  for (let k = 0; k < batch.size; k += EMBEDDED_STATEMENT_ROWS) {
    if (k > 0) await setImmediate();
    const source = batch.select(k, Math.min(k + EMBEDDED_STATEMENT_ROWS, batch.size));
    await trx.raw(`insert into ${batch.table} (${batch.columns}) ${source.sql} ${onConflict}`, source.bindings);
  }
}

/** The embedded database: one connection, no statement time-out (work budgets instead), no COPY from a client. */
export const embeddedBackend: Backend = {
  kind: "embedded",
  backgroundStatementMs: EMBEDDED_BACKGROUND_STATEMENT_MS,

  async walk<Row>(session: GraphSession, walk: Walk, limits: WalkLimits): Promise<Row[]> {
    // Nothing can interrupt a statement here: the statement counts the rows it visits and
    // stops itself past the budget. The count starts from zero for every query (one connection).
    const run = walk.budgeted(limits.maxVisits);
    return session.knex.transaction(async (trx) => {
      // No Memoize or Materialize: a step served from a cache would not be counted.
      await trx.raw(
        "select set_config('join_collapse_limit', '1', true), set_config('enable_memoize', 'off', true), " +
          "set_config('enable_material', 'off', true), setval('graph_work_visits', 0)",
      );
      return rawRows<Row>(trx, run);
    });
  },

  async appendRows(trx: Knex, batch: RowBatch) {
    await trx.raw("savepoint append_rows");
    try {
      await insertInSlices(trx, batch, "");
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      await trx.raw("rollback to savepoint append_rows");
      await trx.raw("release savepoint append_rows");
      return false;
    }
    await trx.raw("release savepoint append_rows");
    return true;
  },

  upsertRows(trx: Knex, batch: RowBatch, onConflict: string) {
    return insertInSlices(trx, batch, onConflict);
  },
};
