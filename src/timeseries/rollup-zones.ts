import type { Knex } from "knex";
import { rawRows } from "../db/backend.js";
import { storageOf } from "../db/storage.js";
import { DAY_MS } from "./calendar.js";
import { buildPacks } from "./rollup-packs.js";
import { Pace } from "./rollup-pace.js";
import { FROM_ROWS, LOCK_CLASS, rebuildPeriods, ROW_COLUMNS, utcDay } from "./rollup-store.js";

/**
 * The zones whose local days and months a tenant's rollups hold (`rollup_zones`): each built once
 * from the tenant's cells at its first query in that zone, then kept by every reconcile
 * (rollup-store.ts).
 */

const builtZones = new WeakMap<Knex, Set<string>>();

/**
 * Makes sure the tenant's rollups hold the local days and months of `zone`: built once from its
 * cells (under the tenant's reconcile lock), then kept by every reconcile. Cached per process.
 *
 * Where the backend bounds background statements (`boundMs`: the embedded database, whose
 * statements hold the service's only thread), the build is the reconcile's own rebuild of local
 * days, months and packs, item by item and a number of days a statement that the pace sets
 * (rollup-pace.ts), the event loop turning between statements; one transaction still holds it, so a
 * reconcile waits for it as before. Otherwise (PostgreSQL) three set-based statements.
 */
export async function ensureZone(knex: Knex, tenant: string, zone: string, boundMs = storageOf(knex).backgroundStatementMs): Promise<void> {
  let built = builtZones.get(knex);
  if (built === undefined) builtZones.set(knex, (built = new Set()));
  const key = `${tenant}\u0000${zone}`;
  if (built.has(key)) return;
  await knex.transaction(async (trx) => {
    const found = await trx("rollup_zones").where({ tenant, zone }).first();
    if (found !== undefined) return;
    await trx.raw("select pg_advisory_xact_lock(?, hashtext(?))", [LOCK_CLASS, tenant]);
    if ((await trx("rollup_zones").where({ tenant, zone }).first()) !== undefined) return;
    for (const table of ["rollup_periods", "rollup_day_packs"]) await trx(table).where({ tenant, zone }).del();
    if (boundMs === undefined) await buildAtOnce(trx, tenant, zone);
    else await buildInSteps(trx, tenant, zone, boundMs);
    await trx("rollup_zones").insert({ tenant, zone });
  });
  built.add(key);
}

/** The zone's days from all the tenant's cells, its months from the days, then the packs: a statement each. */
async function buildAtOnce(trx: Knex, tenant: string, zone: string): Promise<void> {
  await trx.raw(
    `insert into rollup_periods (tenant, item_id, zone, grain, period, ${ROW_COLUMNS})
     select ?, c.item_id, ?, 'day', (c.cell at time zone ?)::date as period, ${FROM_ROWS}
     from rollup_cells c where c.tenant = ? group by c.item_id, period`,
    [tenant, zone, zone, tenant],
  );
  await trx.raw(
    `insert into rollup_periods (tenant, item_id, zone, grain, period, ${ROW_COLUMNS})
     select ?, c.item_id, ?, 'month', date_trunc('month', c.period)::date as month, ${FROM_ROWS}
     from rollup_periods c where c.tenant = ? and c.zone = ? and c.grain = 'day' group by c.item_id, month`,
    [tenant, zone, tenant, zone],
  );
  await buildPacks(trx, tenant, zone);
}

/**
 * The zone's days, months and packs rebuilt as a reconcile rebuilds them for marked days: every UTC
 * day from each item's first cell to its last, in chunks the pace sizes. A month (or half-year)
 * that several chunks touch is made again by each from the day rows there by then, the last time
 * from all of them. Each item's span is one loose index scan of the cells' key.
 */
async function buildInSteps(trx: Knex, tenant: string, zone: string, boundMs: number): Promise<void> {
  const pace = new Pace(boundMs);
  const spans = await pace.run(() =>
    rawRows<{ item: string; first: number; last: number }>(trx, {
      sql: `with recursive i(item_id) as (
              (select item_id from rollup_cells where tenant = ? order by item_id limit 1)
              union all
              select (select c.item_id from rollup_cells c where c.tenant = ? and c.item_id > i.item_id order by c.item_id limit 1) from i where i.item_id is not null)
            select i.item_id as item,
              date_part('epoch', (select min(c.cell) from rollup_cells c where c.tenant = ? and c.item_id = i.item_id)) * 1000 as first,
              date_part('epoch', (select max(c.cell) from rollup_cells c where c.tenant = ? and c.item_id = i.item_id)) * 1000 as last
            from i where i.item_id is not null`,
      bindings: [tenant, tenant, tenant, tenant],
    }),
  );
  // Made as they are taken: thousands of sparse items over years would be millions of days.
  function* daysOf() {
    for (const { item, first, last } of spans) {
      for (let t = Math.floor(first / DAY_MS) * DAY_MS; t <= last; t += DAY_MS) yield { item, day: utcDay(t) };
    }
  }
  const days = daysOf();
  for (let ended = false; !ended; ) {
    const chunk: { item: string; day: string }[] = [];
    while (chunk.length < pace.span.marks) {
      const next = days.next();
      if (next.done === true) {
        ended = true;
        break;
      }
      chunk.push(next.value);
    }
    if (chunk.length === 0) break;
    await rebuildPeriods(trx, tenant, pace, chunk, [zone]);
    pace.adapt();
  }
}
