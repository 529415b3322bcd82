import type { Knex } from "knex";
import type { GraphSession } from "../../db/database.js";
import { ProblemError, type ProblemCode } from "../../errors.js";
import { entityJson, type EntityJson, type EntityRow } from "../entity.js";
import type { CompiledQuery, QueryParameters } from "./compiler.js";

/** For each label (without `?`), the distinct entities (or values) bound to it. */
export type QueryOutput = Record<string, (EntityJson | unknown)[]>;

export interface QueryLimits {
  /** Longest the statement may run (enforced by PostgreSQL's statement_timeout). */
  timeoutMs: number;
  /** Most match rows the query may produce. */
  maxRows: number;
  /** The code a limit breach is reported with; the caller knows what failed (a transform, a calculation). */
  failureCode?: Extract<ProblemCode, "TRANSFORM_FAILED" | "CALCULATION_FAILED">;
}

interface OutputRow extends Partial<EntityRow> {
  label: number;
  value: unknown;
  matches: number;
}

const QUERY_CANCELED = "57014";

/**
 * Runs a compiled query in the caller's tenant, as one statement inside a transaction that
 * carries the statement time-out. Going past either limit fails with a clear 422, never a partial answer.
 */
export async function executeQuery(
  session: GraphSession,
  compiled: CompiledQuery,
  tenant: string,
  params: QueryParameters,
  limits: QueryLimits,
): Promise<QueryOutput> {
  const bindings = compiled.bind({ tenant, params, maxRows: limits.maxRows });
  const failureCode = limits.failureCode ?? "TRANSFORM_FAILED";
  let rows: OutputRow[];
  try {
    if (session.presetTimeoutMs === limits.timeoutMs) {
      // The pool's connections carry statement_timeout and join_collapse_limit: one round trip.
      rows = ((await session.knex.raw(compiled.sql, bindings as Knex.RawBinding[])) as { rows: OutputRow[] }).rows;
    } else {
      rows = await session.knex.transaction(async (trx) => {
        // join_collapse_limit = 1: PostgreSQL keeps the join order the compiler wrote (and skips
        // searching for another: planning a 13-relation walk otherwise takes longer than running it).
        await trx.raw("select set_config('statement_timeout', ?, true), set_config('join_collapse_limit', '1', true)", [
          `${Math.max(1, Math.floor(limits.timeoutMs))}ms`,
        ]);
        return ((await trx.raw(compiled.sql, bindings as Knex.RawBinding[])) as { rows: OutputRow[] }).rows;
      });
    }
  } catch (err) {
    if ((err as { code?: string }).code === QUERY_CANCELED) {
      throw new ProblemError(failureCode, `the graph query ran longer than ${limits.timeoutMs} ms (QUERY_TIMEOUT_MS) and was stopped`, {
        cause: err,
      });
    }
    throw err;
  }
  const matches = rows[0]?.matches ?? 0;
  if (matches > limits.maxRows) {
    throw new ProblemError(failureCode, `the graph query matched more than ${limits.maxRows} rows (QUERY_MAX_ROWS); narrow it down`);
  }
  const output: QueryOutput = {};
  for (const label of compiled.labels) output[label.name] = [];
  for (const row of rows) {
    const label = compiled.labels[row.label]!;
    const values = output[label.name]!;
    if (label.kind === "value") values.push(row.value);
    else if (row.id != null) values.push(entityJson(row as EntityRow));
  }
  return output;
}
