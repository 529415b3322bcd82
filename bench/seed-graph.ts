import type { Knex } from "knex";

/**
 * The same walk as an expert orders it by hand: from the agreement's public id outward (through
 * the tenant-scoped attribute index, migration 006), run with join_collapse_limit = 1. The
 * agreement is looked up in a subquery of its own (`offset 0`), by that index alone: a plan made
 * once without the values (a prepared statement's generic plan) would otherwise add the tenant's
 * whole range of agreements to the lookup as a bitmap AND (20,000 index entries read per walk).
 * Its bindings: {@link handTunedBindings}.
 */
export const HAND_TUNED = `
select ap.id, ap.type, ap.key, ap.attributes
from (select a.id, a.tenant, a.type from entities a
      where graph_scoped_attributes(a.tenant, a.type, a.attributes) @> graph_scoped_attributes(?::text, 'Agreement', ?::jsonb) offset 0) a
join links l2 on l2.tenant = a.tenant and l2.from_id = a.id and l2.relation = 'inIndexSet'
join entities s on s.tenant = a.tenant and s.id = l2.to_id and s.type = 'IndexSet'
join links l1 on l1.tenant = a.tenant and l1.to_id = s.id and l1.relation = 'hasIndexSet'
join entities t on t.tenant = a.tenant and t.id = l1.from_id and t.type = 'Tenant' and t.key = ?
join links l3 on l3.tenant = a.tenant and l3.from_id = a.id and l3.relation = 'hasProduct'
join entities p on p.tenant = a.tenant and p.id = l3.to_id and p.type = 'AgreementProduct'
join links l4 on l4.tenant = a.tenant and l4.from_id = p.id and l4.relation = 'hasArrangement'
join entities r on r.tenant = a.tenant and r.id = l4.to_id and r.type = 'Arrangement'
join links l5 on l5.tenant = a.tenant and l5.from_id = r.id and l5.relation = 'hasAccessPointRelation'
join entities rel on rel.tenant = a.tenant and rel.id = l5.to_id and rel.type = 'AccessPointRelation'
join links l6 on l6.tenant = a.tenant and l6.from_id = rel.id and l6.relation = 'accessPoint'
join entities ap on ap.tenant = a.tenant and ap.id = l6.to_id and ap.type = 'AccessPoint'
where a.tenant = ? and a.type = 'Agreement'
order by ap.key`;

/** The bindings of {@link HAND_TUNED} for an agreement's public id. */
export function handTunedBindings(tenant: string, publicId: string): string[] {
  return [tenant, JSON.stringify({ publicId }), tenant, tenant];
}


/** A tenant, an index set and per agreement: product, arrangement, two relations, two access points. */
export async function seedGraph(knex: Knex, tenant: string, count: number): Promise<number> {
  const q = (sql: string, bindings: unknown[]) => knex.raw(sql, bindings as Knex.RawBinding[]);
  await q(
    `insert into entities (tenant, id, type, key, attributes) values (?, gen_random_uuid(), 'Tenant', ?, '{}'), (?, gen_random_uuid(), 'IndexSet', 'AGREEMENTS', '{}')`,
    [tenant, tenant, tenant],
  );
  const entity = (type: string, keyExpr: string, attrs: string) =>
    q(`insert into entities (tenant, id, type, key, attributes) select ?, gen_random_uuid(), '${type}', ${keyExpr}, ${attrs} from generate_series(0, ? - 1) g`, [tenant, count]);
  await entity("Agreement", "'AGR-' || g", "jsonb_build_object('publicId', 'AGR-' || g)");
  await entity("AgreementProduct", "'AGR-' || g || '-P'", "'{}'::jsonb");
  await entity("Arrangement", "'AGR-' || g || '-ARR'", "'{}'::jsonb");
  for (const n of [1, 2]) {
    await entity("AccessPointRelation", `'AGR-' || g || '-R${n}'`, "'{}'::jsonb");
    await entity("AccessPoint", `'EAN-' || g || '-${n}'`, `jsonb_build_object('externalId', 'EAN-' || g || '-${n}', 'accessPointType', 'ELECTRICITY')`);
  }
  // The links below join the new entities by key: without statistics on them, PostgreSQL plans
  // those joins as if the table were empty, and a fresh database took minutes.
  await knex.raw("analyze entities");
  const link = (fromType: string, fromKey: string, relation: string, toType: string, toKey: string) =>
    q(
      `insert into links (tenant, from_id, relation, to_id)
       select ?, f.id, ?, t.id from generate_series(0, ? - 1) g
       join entities f on f.tenant = ? and f.type = ? and f.key = ${fromKey}
       join entities t on t.tenant = ? and t.type = ? and t.key = ${toKey}`,
      [tenant, relation, count, tenant, fromType, tenant, toType],
    );
  await q(
    `insert into links (tenant, from_id, relation, to_id) select ?, t.id, 'hasIndexSet', s.id from entities t, entities s
     where t.tenant = ? and t.type = 'Tenant' and s.tenant = ? and s.type = 'IndexSet'`,
    [tenant, tenant, tenant],
  );
  await link("Agreement", "'AGR-' || g", "inIndexSet", "IndexSet", "'AGREEMENTS'");
  await link("Agreement", "'AGR-' || g", "hasProduct", "AgreementProduct", "'AGR-' || g || '-P'");
  await link("AgreementProduct", "'AGR-' || g || '-P'", "hasArrangement", "Arrangement", "'AGR-' || g || '-ARR'");
  for (const n of [1, 2]) {
    await link("Arrangement", "'AGR-' || g || '-ARR'", "hasAccessPointRelation", "AccessPointRelation", `'AGR-' || g || '-R${n}'`);
    await link("AccessPointRelation", `'AGR-' || g || '-R${n}'`, "accessPoint", "AccessPoint", `'EAN-' || g || '-${n}'`);
  }
  return 2 + count * 7;
}

