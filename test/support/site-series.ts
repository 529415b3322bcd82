import type { Knex } from "knex";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";

/** The select query of the calculation tests: the Site S1's consumption and production items. */
export const SITE_SELECT = 'Site ?site; entity:key "S1"; link:consumption Item:?cons; link:production Item:?prod.';

export const SITE_RANGE = { period: "Custom range", from: "2024-01-01T10:00:00Z", to: "2024-01-01T11:15:00Z", timeZone: "UTC" };
export const SITE_QUARTERS = { aggregation: { metric: "sum", interval: "15 minute" } };
/** The specification's derived series over the site: a − b, 15-minute buckets, the first and last removed. */
export const SITE_NET_BLOCK = {
  select: SITE_SELECT,
  expression: "a - b",
  expressionType: "TIMESERIES",
  eventDateRange: SITE_RANGE,
  queryOptions: SITE_QUARTERS,
  removeBuckets: [0, -1],
  scope: { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } }, b: { type: "TIMESERIES", timeseries: { selectVariable: "{{?prod}}" } } },
};

/**
 * The calculation tests' site: Site S1 with a consumption and a production Item (also linked as
 * `meter`), and their events between 10:00 and 11:00 UTC on 2024-01-01. Answers the items' ids.
 */
export async function seedSiteSeries(knex: Knex, tenant: string): Promise<{ cons: string; prod: string }> {
  const stored = await upsertEntities(knex, tenant, [
    { type: "Site", key: "S1" },
    { type: "Item", key: "cons" },
    { type: "Item", key: "prod" },
  ]);
  const [cons, prod] = [stored[1]!.id, stored[2]!.id];
  await createLinks(knex, tenant, [
    { from: { type: "Site", key: "S1" }, relation: "consumption", to: { id: cons } },
    { from: { type: "Site", key: "S1" }, relation: "production", to: { id: prod } },
    { from: { type: "Site", key: "S1" }, relation: "meter", to: { id: cons } },
    { from: { type: "Site", key: "S1" }, relation: "meter", to: { id: prod } },
  ]);
  const at = (hm: string) => `2024-01-01T${hm}:00Z`;
  await ingestEvents(knex, tenant, [
    ...[["10:00", 1], ["10:05", 2], ["10:20", 5], ["10:40", 7], ["10:50", 1], ["11:00", 4]].map(([t, v]) => ({ itemId: cons, timestamp: at(t as string), value: v })),
    ...[["10:16", 1], ["10:31", 2], ["10:46", 10]].map(([t, v]) => ({ itemId: prod, timestamp: at(t as string), value: v })),
  ]);
  return { cons, prod };
}
