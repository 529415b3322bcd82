import type { Knex } from "knex";

/** At most this many entity types, relations and attribute names per type in a summary. */
export const SCHEMA_LIMIT = 200;

/** What a tenant's graph holds, for completion in an editor: never the entities themselves. */
export interface GraphSchema {
  types: { type: string; count: number; attributes: string[] }[];
  relations: { relation: string; from: string; to: string; count: number }[];
  truncated: boolean;
}

/**
 * Summarises a tenant's graph in two statements: entity types with their attribute names, and
 * relations with the types they join (each capped at {@link SCHEMA_LIMIT}, `truncated` telling).
 * Both scan the tenant's entities (and links): meant for an editor fetched once per session.
 */
export async function graphSchema(knex: Knex, tenant: string): Promise<GraphSchema> {
  const limit = SCHEMA_LIMIT + 1;
  const [typeRows, relationRows] = await Promise.all([
    knex.raw<{ rows: { type: string; count: number; attributes: string[] | null }[] }>(
      `with types as (
         select type, count(*)::int as count from entities where tenant = ? group by type order by type limit ?
       ), names as (
         select e.type, k.name, row_number() over (partition by e.type order by k.name) as n
         from entities e join types t on t.type = e.type
         cross join lateral jsonb_object_keys(e.attributes) as k(name)
         where e.tenant = ?
         group by e.type, k.name
       )
       select t.type, t.count, coalesce((select jsonb_agg(name order by name) from names where names.type = t.type and n <= ?), '[]'::jsonb) as attributes
       from types t order by t.type`,
      [tenant, limit, tenant, limit],
    ),
    knex.raw<{ rows: { relation: string; from: string; to: string; count: number }[] }>(
      `select l.relation, f.type as "from", t.type as "to", count(*)::int as count
       from links l
       join entities f on f.tenant = l.tenant and f.id = l.from_id
       join entities t on t.tenant = l.tenant and t.id = l.to_id
       where l.tenant = ?
       group by l.relation, f.type, t.type
       order by l.relation, f.type, t.type
       limit ?`,
      [tenant, limit],
    ),
  ]);
  let truncated = typeRows.rows.length > SCHEMA_LIMIT || relationRows.rows.length > SCHEMA_LIMIT;
  const types = typeRows.rows.slice(0, SCHEMA_LIMIT).map((row) => {
    const attributes = row.attributes ?? [];
    if (attributes.length > SCHEMA_LIMIT) truncated = true;
    return { type: row.type, count: Number(row.count), attributes: attributes.slice(0, SCHEMA_LIMIT) };
  });
  const relations = relationRows.rows.slice(0, SCHEMA_LIMIT).map((row) => ({ ...row, count: Number(row.count) }));
  return { types, relations, truncated };
}
