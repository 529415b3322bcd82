import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { ProblemError, isUniqueViolation } from "../errors.js";
import { isEmptyTransform, type ApiDefinition, type ApiDefinitionData, type ApiDefinitionInput } from "./api-definition.js";

interface Row {
  id: string;
  external_id: string;
  name: string | null;
  version: string | null;
  active: boolean;
  data: ApiDefinitionData;
  query: string;
  transform: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = ["id", "external_id", "name", "version", "active", "data", "query", "transform", "created_at", "updated_at"];
/**
 * Millisecond timestamps that grow with every change, even two in one millisecond: compiled
 * definitions are cached by (tenant, externalId, updatedAt), so an update must never keep the key.
 */
const NEXT_UPDATED_AT = "date_trunc('milliseconds', greatest(clock_timestamp(), updated_at + interval '1 millisecond'))";

function toDefinition(row: Row): ApiDefinition {
  return {
    id: row.id,
    name: row.name,
    externalId: row.external_id,
    version: row.version,
    active: row.active,
    data: row.data,
    query: row.query,
    transform: row.transform ?? "",
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
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
        created_at: knex.raw("date_trunc('milliseconds', clock_timestamp())"),
        updated_at: knex.raw("date_trunc('milliseconds', clock_timestamp())"),
      })
      .returning(COLUMNS)) as Row[];
    return toDefinition(row!);
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(input.externalId, err);
    throw err;
  }
}

export async function findDefinition(knex: Knex, tenant: string, externalId: string): Promise<ApiDefinition | undefined> {
  const row = (await knex("api_definitions").where({ tenant, external_id: externalId }).first(COLUMNS)) as Row | undefined;
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
  const [rows, counted] = await Promise.all([
    base.clone().select(COLUMNS).orderBy("external_id").limit(options.limit).offset(options.offset) as Promise<Row[]>,
    base.clone().select(knex.raw("count(*)::int as total")) as Promise<{ total: number }[]>,
  ]);
  return { apiDefinitions: rows.map(toDefinition), total: counted[0]?.total ?? 0, limit: options.limit, offset: options.offset };
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

export async function setDefinitionActive(knex: Knex, tenant: string, externalId: string, active: boolean): Promise<ApiDefinition | undefined> {
  const [row] = (await knex("api_definitions")
    .where({ tenant, external_id: externalId })
    .update({ active, updated_at: knex.raw(NEXT_UPDATED_AT) })
    .returning(COLUMNS)) as Row[];
  return row === undefined ? undefined : toDefinition(row);
}

export async function deleteDefinition(knex: Knex, tenant: string, externalId: string): Promise<boolean> {
  const deleted: number = await knex("api_definitions").where({ tenant, external_id: externalId }).del();
  return deleted > 0;
}
