import type { Knex } from "knex";
import { seedGraph } from "./seed-graph.js";

/** How many of each kind {@link seedShapes} writes, at a scale (1: the 140,000-entity tenant of issue 30). */
export interface ShapeCounts {
  agreements: number;
  persons: number;
  devices: number;
  sites: number;
  meters: number;
  cities: number;
}

export function shapeCounts(scale: number): ShapeCounts {
  return {
    agreements: Math.max(1, Math.round(20_000 * scale)),
    persons: Math.max(1, Math.round(2_000 * scale)),
    devices: Math.max(1, Math.round(10_000 * scale)),
    sites: 5,
    meters: 200,
    cities: 50,
  };
}

/**
 * The tenant of the graph-shapes benchmark, all written with set-based SQL: {@link seedGraph}'s
 * agreements (a hub: the index set every agreement links to; chains of six links; a value every
 * access point holds), and beside them
 * - Person `P-i`: `name` "N-i", `city` "C{i % cities}" (a common value), `tags` an array of two of
 *   "t0"…"t12";
 * - Device `D-i`: `owner` "N-{i % persons}" (a value join to a person's name), `model`
 *   "M{i % 20}", `status` "ok" on every device, `labels` an array of two of "l0"…"l9"; a link
 *   `installedAt` to Site `S-{i % sites}` (hubs), and on every tenth a self link `peer`;
 * - Meter `M-i`: `zone` "Z{i % 4}"; a link `feeds` to the next meter, and a self link on every
 *   third; `ownerId` the id of the meter before on meters 1 and 101 (an entity label as a value).
 * Returns the number of entities written.
 */
export async function seedShapes(knex: Knex, tenant: string, counts: ShapeCounts): Promise<number> {
  const q = (sql: string, bindings: unknown[]) => knex.raw(sql, bindings as Knex.RawBinding[]);
  const graphEntities = await seedGraph(knex, tenant, counts.agreements);
  const entity = (type: string, count: number, keyExpr: string, attrs: string, bindings: unknown[] = []) =>
    q(`insert into entities (tenant, id, type, key, attributes) select ?, gen_random_uuid(), '${type}', ${keyExpr}, ${attrs} from generate_series(0, ? - 1) g`, [
      tenant,
      ...bindings,
      count,
    ]);
  await entity(
    "Person",
    counts.persons,
    "'P-' || g",
    "jsonb_build_object('name', 'N-' || g, 'city', 'C' || (g % ?), 'tags', jsonb_build_array('t' || (g % 7), 't' || (7 + g % 6)))",
    [counts.cities],
  );
  await entity(
    "Device",
    counts.devices,
    "'D-' || g",
    "jsonb_build_object('owner', 'N-' || (g % ?), 'model', 'M' || (g % 20), 'status', 'ok', 'labels', jsonb_build_array('l' || (g % 10), 'l' || ((g + 3) % 10)))",
    [counts.persons],
  );
  await entity("Site", counts.sites, "'S-' || g", "'{}'::jsonb");
  await entity("Meter", counts.meters, "'M-' || g", "jsonb_build_object('zone', 'Z' || (g % 4))");
  // Statistics first: the joins by key below would otherwise be planned as if the table were empty.
  await knex.raw("analyze entities");
  const link = (fromType: string, fromKey: string, relation: string, toType: string, toKey: string, count: number, where = "true") =>
    q(
      `insert into links (tenant, from_id, relation, to_id)
       select ?, f.id, ?, t.id from generate_series(0, ? - 1) g
       join entities f on f.tenant = ? and f.type = ? and f.key = ${fromKey}
       join entities t on t.tenant = ? and t.type = ? and t.key = ${toKey}
       where ${where}`,
      [tenant, relation, count, tenant, fromType, tenant, toType],
    );
  await link("Device", "'D-' || g", "installedAt", "Site", `'S-' || (g % ${counts.sites})`, counts.devices);
  await link("Device", "'D-' || g", "peer", "Device", "'D-' || g", counts.devices, "g % 10 = 0");
  await link("Meter", "'M-' || g", "feeds", "Meter", "'M-' || (g + 1)", counts.meters);
  await link("Meter", "'M-' || g", "feeds", "Meter", "'M-' || g", counts.meters, "g % 3 = 0");
  await q(
    `update entities m set attributes = m.attributes || jsonb_build_object('ownerId', o.id)
     from entities o where m.tenant = ? and m.type = 'Meter' and m.key in ('M-1', 'M-101')
     and o.tenant = ? and o.type = 'Meter' and o.key = 'M-' || (substr(m.key, 3)::int - 1)`,
    [tenant, tenant],
  );
  await knex.raw("analyze entities");
  await knex.raw("analyze links");
  return graphEntities + counts.persons + counts.devices + counts.sites + counts.meters;
}
