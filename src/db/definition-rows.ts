import type { Knex } from "knex";

/**
 * The columns API Definitions and Calculation Definitions share, and their one mapping to JSON:
 * each store adds its own columns (an API definition's query and transform, a calculation's type).
 */
export interface DefinitionRow<Data> {
  id: string;
  external_id: string;
  name: string | null;
  active: boolean;
  data: Data;
  created_at: Date;
  updated_at: Date;
}

export const DEFINITION_COLUMNS = ["id", "external_id", "name", "active", "data", "created_at", "updated_at"] as const;

export interface DefinitionFields<Data> {
  id: string;
  externalId: string;
  name: string | null;
  active: boolean;
  data: Data;
  createdAt: string;
  updatedAt: string;
}

export function definitionFields<Data>(row: DefinitionRow<Data>): DefinitionFields<Data> {
  return {
    id: row.id,
    name: row.name,
    externalId: row.external_id,
    active: row.active,
    data: row.data,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Millisecond timestamps that grow with every change, even two in one millisecond: compiled
 * definitions are cached by (tenant, externalId, updatedAt), so an update must never keep the key.
 */
export const NEXT_UPDATED_AT = "date_trunc('milliseconds', greatest(clock_timestamp(), updated_at + interval '1 millisecond'))";

/** One page of a tenant's definitions by externalId, and how many there are in all. */
export async function definitionPage<R>(base: Knex.QueryBuilder, columns: readonly string[], page: { limit: number; offset: number }): Promise<{ rows: R[]; total: number }> {
  const [rows, counted] = await Promise.all([
    base.clone().select(columns).orderBy("external_id").limit(page.limit).offset(page.offset) as Promise<R[]>,
    base.clone().count({ total: "*" }) as Promise<{ total: number | string }[]>,
  ]);
  return { rows, total: Number(counted[0]?.total ?? 0) };
}
