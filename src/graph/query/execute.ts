import type { GraphSession } from "../../db/options.js";
import { walkGraph, WALK_BUDGET_EXCEEDED, WALK_TIMED_OUT, type Statement, type Walk } from "../../db/storage.js";
import { ProblemError, type ProblemCode } from "../../errors.js";
import { entityJson, type EntityJson, type EntityRow } from "../entity.js";
import type { CompiledQuery, CompiledStatement, QueryParameters } from "./compiler.js";
import { graphStatistics } from "./statistics.js";
import { inSpan } from "../../observe/tracing.js";

/** For each label (without `?`), the distinct entities (or values) bound to it. */
export type QueryOutput = Record<string, (EntityJson | unknown)[]>;

export interface QueryLimits {
  /** Longest the statement may run (enforced by PostgreSQL's statement_timeout). */
  timeoutMs: number;
  /** Most match rows the query may produce. */
  maxRows: number;
  /**
   * Most rows the walk may visit (links followed and entities looked at), where the time limit
   * cannot hold (the embedded database); default `VISITS_PER_MATCH_ROW` per allowed match row.
   */
  maxVisits?: number;
  /** The code a limit breach is reported with; the caller knows what failed (a transform, a calculation). */
  failureCode?: Extract<ProblemCode, "TRANSFORM_FAILED" | "CALCULATION_FAILED">;
}

/** A row of the statement: an entity or value of a label, or (label null) only the count of match rows. */
interface OutputRow extends Partial<EntityRow> {
  label: number | null;
  value: unknown;
  matches: number;
}

/** The default work budget: this many visited rows per allowed match row (10,000 rows: 500,000 visits, about 2 s of the embedded database). */
export const VISITS_PER_MATCH_ROW = 50;

/**
 * The stored definition a query was compiled from, as it was read: the guarded statement runs
 * the walk only while that row is still there, unchanged and active.
 */
export interface DefinitionGuard {
  table: "api_definitions";
  externalId: string;
  id: string;
  /** The row's updated_at (ISO, milliseconds): every change moves it. */
  updatedAt: string;
}

/** A row of the guarded statement: the gate's value with each. */
type GuardedRow = OutputRow & { current: boolean };

/**
 * Runs a compiled query in the caller's tenant, as one statement within its limits (the backend's
 * walk, src/db/backend.ts). Going past any limit fails with a clear 422, never a partial answer.
 */
export async function executeQuery(
  session: GraphSession,
  compiled: CompiledQuery,
  tenant: string,
  params: QueryParameters,
  limits: QueryLimits,
): Promise<QueryOutput> {
  return outputOf(compiled, await runStatement(session, compiled, tenant, params, limits), limits);
}

/**
 * Runs a compiled query only if its definition is still as `guard` says, in the same statement:
 * the definition is read in the statement's own snapshot, so a change or a deactivation committed
 * before the statement started is always seen, with no round trip of its own. Undefined when the
 * definition is no longer the guard's (changed, inactive, renamed or deleted): the walk did not run.
 */
export async function executeGuardedQuery(
  session: GraphSession,
  compiled: CompiledQuery,
  tenant: string,
  params: QueryParameters,
  limits: QueryLimits,
  guard: DefinitionGuard,
): Promise<QueryOutput | undefined> {
  const rows = (await runStatement(session, compiled, tenant, params, limits, guard)) as GuardedRow[];
  if (rows[0]?.current !== true) return undefined;
  return outputOf(compiled, rows, limits);
}

/**
 * The guard as the query's gate: the definition's row is still there, unchanged and active. One
 * text for every guard (its table is always api_definitions), so the compiled query finds its
 * gated statement without building the text at every request; the guard's values are bindings.
 */
const DEFINITION_GATE =
  "exists (select 1 from api_definitions d where d.tenant = ? and d.external_id = ? and d.id = ? and d.updated_at = ?::timestamptz and d.active)";

async function runStatement(
  session: GraphSession,
  query: CompiledQuery,
  tenant: string,
  params: QueryParameters,
  limits: QueryLimits,
  guard?: DefinitionGuard,
): Promise<OutputRow[]> {
  // The walk planned by the tenant's statistics (src/graph/query/statistics.ts).
  const compiled: CompiledStatement = query.planned(graphStatistics(session, tenant));
  const failureCode = limits.failureCode ?? "TRANSFORM_FAILED";
  const maxVisits = limits.maxVisits ?? limits.maxRows * VISITS_PER_MATCH_ROW;
  const statement = (budgeted: boolean, bindings: unknown[]): Statement => {
    if (guard === undefined) return { sql: budgeted ? compiled.budgetedSql : compiled.sql, bindings: bindings as Statement["bindings"] };
    const gated = compiled.gated(DEFINITION_GATE);
    return { sql: budgeted ? gated.budgetedSql : gated.sql, bindings: [tenant, guard.externalId, guard.id, guard.updatedAt, ...bindings] as Statement["bindings"] };
  };
  const walk: Walk = {
    timed: () => statement(false, compiled.bind({ tenant, params, maxRows: limits.maxRows })),
    budgeted: (visits) => statement(true, compiled.bindBudgeted({ tenant, params, maxRows: limits.maxRows, maxVisits: visits })),
  };
  try {
    // The span names the compiled statement's text (its values are bindings, never in it).
    const sql = statement(false, []).sql;
    return await inSpan("graph walk", { "db.system.name": "postgresql", "db.query.text": sql }, async (span) => {
      const rows = await walkGraph<OutputRow>(session, walk, { timeoutMs: limits.timeoutMs, maxVisits });
      span.setAttribute("db.response.returned_rows", rows.length);
      return rows;
    });
  } catch (err) {
    if ((err as { code?: string }).code === WALK_BUDGET_EXCEEDED) {
      throw new ProblemError(
        failureCode,
        `the graph query visited more than ${maxVisits} rows of the graph (its work limit on the embedded database) and was stopped; narrow it down`,
        { cause: err },
      );
    }
    if ((err as { code?: string }).code === WALK_TIMED_OUT) {
      throw new ProblemError(failureCode, `the graph query ran longer than ${limits.timeoutMs} ms (QUERY_TIMEOUT_MS) and was stopped`, {
        cause: err,
      });
    }
    throw err;
  }
}

/** The query output of the statement's rows, or the row limit's 422. */
function outputOf(compiled: Pick<CompiledQuery, "labels">, rows: OutputRow[], limits: QueryLimits): QueryOutput {
  const failureCode = limits.failureCode ?? "TRANSFORM_FAILED";
  const matches = rows[0]?.matches ?? 0;
  if (matches > limits.maxRows) {
    throw new ProblemError(failureCode, `the graph query matched more than ${limits.maxRows} rows (QUERY_MAX_ROWS); narrow it down`);
  }
  const output: QueryOutput = {};
  for (const label of compiled.labels) output[label.name] = [];
  for (const row of rows) {
    if (row.label === null) continue;
    const label = compiled.labels[row.label]!;
    const values = output[label.name]!;
    if (label.kind === "value") values.push(row.value);
    else if (row.id != null) values.push(entityJson({ id: row.id, type: label.type!, key: row.key!, attributes: row.attributes! }));
  }
  return output;
}
