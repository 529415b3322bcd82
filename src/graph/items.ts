import type { Knex } from "knex";

/** The graph lookups that time-series requests make about Items (spec §2.2): what they are, what they belong to. */

/** The `itemAction` attribute (null: none) of each of `itemIds` that is an Item of the tenant; the others are absent. */
export async function itemActions(knex: Knex, tenant: string, itemIds: string[]): Promise<Map<string, string | null>> {
  const rows = (await knex("entities")
    .where({ tenant, type: "Item" })
    .whereIn("id", itemIds)
    .select("id", knex.raw("attributes->>'itemAction' as action"))) as { id: string; action: string | null }[];
  return new Map(rows.map((r) => [r.id, r.action]));
}

/**
 * How each of `itemIds` that is an Item of the tenant takes events: its `itemAction`, and whether
 * its events are stored — all but those of a `STREAM` item, unless its attribute `persist` is true.
 */
export async function itemIngestKinds(knex: Knex, tenant: string, itemIds: string[]): Promise<Map<string, { action: string | null; stored: boolean }>> {
  const rows = (await knex("entities")
    .where({ tenant, type: "Item" })
    .whereIn("id", itemIds)
    .select("id", knex.raw("attributes->>'itemAction' as action"), knex.raw("attributes->'persist' = 'true'::jsonb as persist"))) as {
    id: string;
    action: string | null;
    persist: boolean | null;
  }[];
  return new Map(rows.map((r) => [r.id, { action: r.action, stored: r.action !== "STREAM" || r.persist === true }]));
}

/** The calculation definition a derived Item's `definedBy` ItemDefinition names (attribute `calculationDefinition`), if any. */
export async function definingCalculation(knex: Knex, tenant: string, itemId: string): Promise<string | undefined> {
  const row = (await knex("links as l")
    .join("entities as d", function () {
      this.on("d.tenant", "=", "l.tenant").andOn("d.id", "=", "l.to_id");
    })
    .where({ "l.tenant": tenant, "l.from_id": itemId, "l.relation": "definedBy", "d.type": "ItemDefinition" })
    .first(knex.raw("d.attributes->>'calculationDefinition' as name"))) as { name: string | null } | undefined;
  return row?.name ?? undefined;
}

/** The ids among `itemIds` that are not Items of the tenant, in their order. */
export async function missingItems(knex: Knex, tenant: string, itemIds: string[]): Promise<string[]> {
  const found = await itemActions(knex, tenant, itemIds);
  return itemIds.filter((id) => !found.has(id));
}

/** The Items linked to an IndexSet (`Item -inIndexSet-> IndexSet`); undefined when there is no such IndexSet. */
export async function indexSetItems(knex: Knex, tenant: string, indexSetId: string): Promise<string[] | undefined> {
  const exists = (await knex("entities").where({ tenant, id: indexSetId, type: "IndexSet" }).first("id")) as { id: string } | undefined;
  if (exists === undefined) return undefined;
  const rows = (await knex("links as l")
    .join("entities as i", function () {
      this.on("i.tenant", "=", "l.tenant").andOn("i.id", "=", "l.from_id");
    })
    .where({ "l.tenant": tenant, "l.to_id": indexSetId, "l.relation": "inIndexSet", "i.type": "Item" })
    .select("i.id")) as { id: string }[];
  return rows.map((r) => r.id);
}
