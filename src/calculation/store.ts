import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { firstTimestamp } from "../db/definition-history.js";
import { DEFINITION_COLUMNS, definitionFields, definitionPage, NEXT_UPDATED_AT, type DefinitionRow } from "../db/definition-rows.js";
import { ProblemError, isUniqueViolation } from "../errors.js";
import type { CalculationDefinition, CalculationDefinitionInput } from "./definition.js";

/** Calculation Definitions as stored: one row each in `calculation_definitions`. */

interface Row extends DefinitionRow<CalculationDefinition["data"]> {
  calculation_type: CalculationDefinition["calculationType"];
}

const COLUMNS = [...DEFINITION_COLUMNS, "calculation_type"];

function toDefinition(row: Row): CalculationDefinition {
  return { ...definitionFields(row), name: row.name ?? "", calculationType: row.calculation_type };
}

function columnsOf(input: CalculationDefinitionInput) {
  return { name: input.name ?? null, calculation_type: input.calculationType, active: input.active ?? true, data: JSON.stringify(input.data) };
}

export async function insertCalculation(knex: Knex, tenant: string, input: CalculationDefinitionInput): Promise<CalculationDefinition> {
  try {
    const [row] = (await knex("calculation_definitions")
      .insert({ tenant, id: randomUUID(), external_id: input.externalId, ...columnsOf(input), created_at: firstTimestamp(knex, tenant, "calculation", input.externalId), updated_at: firstTimestamp(knex, tenant, "calculation", input.externalId) })
      .returning(COLUMNS)) as Row[];
    return toDefinition(row!);
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new ProblemError("INVALID_DEFINITION", `a calculation definition with externalId "${input.externalId}" already exists in this tenant`, { status: 409, cause: err });
    }
    throw err;
  }
}

/** `lock`: in a transaction, the row is locked to its end (a change of it reads it first). */
export async function findCalculation(knex: Knex, tenant: string, externalId: string, lock = false): Promise<CalculationDefinition | undefined> {
  const query = knex("calculation_definitions").where({ tenant, external_id: externalId }).first(COLUMNS);
  const row = (await (lock ? query.forUpdate() : query)) as Row | undefined;
  return row === undefined ? undefined : toDefinition(row);
}

export interface CalculationDefinitionPage {
  calculationDefinitions: CalculationDefinition[];
  total: number;
  limit: number;
  offset: number;
}

export async function listCalculations(knex: Knex, tenant: string, page: { limit: number; offset: number }): Promise<CalculationDefinitionPage> {
  const { rows, total } = await definitionPage<Row>(knex("calculation_definitions").where({ tenant }), COLUMNS, page);
  return { calculationDefinitions: rows.map(toDefinition), total, limit: page.limit, offset: page.offset };
}

/**
 * The definitions `externalIds` name and, transitively, those their EXPRESSION scopes name: what
 * checking them reads (references and cycles), in one statement. Names without a definition are
 * absent from the answer.
 */
export async function reachableCalculations(knex: Knex, tenant: string, externalIds: string[]): Promise<Map<string, CalculationDefinition>> {
  if (externalIds.length === 0) return new Map();
  const columns = COLUMNS.map((c) => `d.${c}`).join(", ");
  // UNION (not UNION ALL) drops rows already reached, so a cycle of references ends the walk.
  const { rows } = (await knex.raw(
    `with recursive reach as (
       select ${columns} from calculation_definitions d where d.tenant = ? and d.external_id in (select jsonb_array_elements_text(?::jsonb))
       union
       select ${columns}
         from reach r
         cross join lateral jsonb_each(case when jsonb_typeof(r.data->'calculation'->'scope') = 'object' then r.data->'calculation'->'scope' else '{}'::jsonb end) s
         join calculation_definitions d on d.tenant = ? and d.external_id = s.value->>'expression'
        where jsonb_typeof(s.value) = 'object' and s.value->>'type' = 'EXPRESSION' and jsonb_typeof(s.value->'expression') = 'string'
     )
     select * from reach`,
    [tenant, JSON.stringify([...new Set(externalIds)]), tenant],
  )) as { rows: Row[] };
  return new Map(rows.map((r) => [r.external_id, toDefinition(r)]));
}

/**
 * Takes the tenant's calculation-graph lock to the end of the transaction (a transaction-scoped
 * advisory lock on a hash of the tenant): saves of one tenant's definitions take turns, so each
 * checks references and cycles against what the ones before it committed. In a statement of its
 * own, so that the reads after it (read committed: a snapshot per statement) see those commits.
 * Another tenant's hash colliding only makes two tenants' saves take turns, never wrong.
 */
export async function lockCalculationGraph(trx: Knex.Transaction, tenant: string): Promise<void> {
  await trx.raw("select pg_advisory_xact_lock(hashtext(?))", [`calculation-graph:${tenant}`]);
}

/** Replaces every field but the externalId. Undefined when there is none to replace. */
export async function replaceCalculation(knex: Knex, tenant: string, externalId: string, input: CalculationDefinitionInput): Promise<CalculationDefinition | undefined> {
  const [row] = (await knex("calculation_definitions")
    .where({ tenant, external_id: externalId })
    .update({ ...columnsOf(input), updated_at: knex.raw(NEXT_UPDATED_AT) })
    .returning(COLUMNS)) as Row[];
  return row === undefined ? undefined : toDefinition(row);
}

/** The definition deleted; undefined when there was none. */
export async function deleteCalculation(knex: Knex, tenant: string, externalId: string): Promise<CalculationDefinition | undefined> {
  const [row] = (await knex("calculation_definitions").where({ tenant, external_id: externalId }).del(COLUMNS)) as Row[];
  return row === undefined ? undefined : toDefinition(row);
}
