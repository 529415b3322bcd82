import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { firstTimestamp } from "../db/definition-history.js";
import { DEFINITION_COLUMNS, definitionFields, definitionPage, NEXT_UPDATED_AT, type DefinitionRow } from "../db/definition-rows.js";
import { ProblemError, isUniqueViolation } from "../errors.js";
import { isEmptyTransform, type ApiDefinition, type ApiDefinitionData, type ApiDefinitionInput } from "./api-definition.js";

interface Row extends DefinitionRow<ApiDefinitionData> {
  version: string | null;
  query: string;
  transform: string | null;
}

const COLUMNS = [...DEFINITION_COLUMNS, "version", "query", "transform"];

function toDefinition(row: Row): ApiDefinition {
  return { ...definitionFields(row), version: row.version, query: row.query, transform: row.transform ?? "" };
}

function columnsOf(input: ApiDefinitionInput) {
  return {
    external_id: input.externalId,
    name: input.name ?? null,
    version: input.version ?? null,
    active: input.active ?? true,
    data: JSON.stringify(input.data ?? {}),
    query: input.query,
    // "Left empty (no content at all)": nothing is stored, not even white space.
    transform: isEmptyTransform(input.transform) ? null : input.transform!,
  };
}

function duplicate(externalId: string, err: unknown): ProblemError {
  return new ProblemError("INVALID_DEFINITION", `an API definition with externalId "${externalId}" already exists in this tenant`, {
    status: 409,
    cause: err,
    errors: [{ path: "externalId", message: "already exists" }],
  });
}

export async function insertDefinition(knex: Knex, tenant: string, input: ApiDefinitionInput): Promise<ApiDefinition> {
  try {
    const [row] = (await knex("api_definitions")
      .insert({
        tenant,
        id: randomUUID(),
        ...columnsOf(input),
        created_at: firstTimestamp(knex, tenant, "api", input.externalId),
        updated_at: firstTimestamp(knex, tenant, "api", input.externalId),
      })
      .returning(COLUMNS)) as Row[];
    return toDefinition(row!);
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(input.externalId, err);
    throw err;
  }
}

/** `lock`: in a transaction, the row is locked to its end (a change of it reads it first). */
export async function findDefinition(knex: Knex, tenant: string, externalId: string, lock = false): Promise<ApiDefinition | undefined> {
  const query = knex("api_definitions").where({ tenant, external_id: externalId }).first(COLUMNS);
  const row = (await (lock ? query.forUpdate() : query)) as Row | undefined;
  return row === undefined ? undefined : toDefinition(row);
}

export interface DefinitionPage {
  apiDefinitions: ApiDefinition[];
  total: number;
  limit: number;
  offset: number;
}

export async function listDefinitions(knex: Knex, tenant: string, options: { limit: number; offset: number; active?: boolean }): Promise<DefinitionPage> {
  const base = knex("api_definitions").where({ tenant });
  if (options.active !== undefined) base.andWhere({ active: options.active });
  const { rows, total } = await definitionPage<Row>(base, COLUMNS, options);
  return { apiDefinitions: rows.map(toDefinition), total, limit: options.limit, offset: options.offset };
}

/** Replaces every field; the externalId may change (a rename). Undefined when there is none to replace. */
export async function replaceDefinition(knex: Knex, tenant: string, externalId: string, input: ApiDefinitionInput): Promise<ApiDefinition | undefined> {
  try {
    const [row] = (await knex("api_definitions")
      .where({ tenant, external_id: externalId })
      .update({ ...columnsOf(input), updated_at: knex.raw(NEXT_UPDATED_AT) })
      .returning(COLUMNS)) as Row[];
    return row === undefined ? undefined : toDefinition(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(input.externalId, err);
    throw err;
  }
}

/** The definition deleted; undefined when there was none. */
export async function deleteDefinition(knex: Knex, tenant: string, externalId: string): Promise<ApiDefinition | undefined> {
  const [row] = (await knex("api_definitions").where({ tenant, external_id: externalId }).del(COLUMNS)) as Row[];
  return row === undefined ? undefined : toDefinition(row);
}
