import type { Knex } from "knex";
import type { Pace } from "./rollup-pace.js";

/**
 * The local days of the rollups packed per item, zone and half-year (migration 014,
 * `rollup_day_packs`; docs/decisions/2026-11-28-rollup-day-packs.md): made from the day rows
 * (`rollup_periods`) by the reconcile and by a zone's first build (rollup-store.ts), read by
 * rollup-query.ts.
 */

/** The half-year (its first local date, 1 January or 1 July) holding a local date. */
const halfOf = (date: string) => `(date_trunc('month', ${date}::timestamp) - ((extract(month from ${date})::int - 1) % 6) * interval '1 month')::date`;

/**
 * The packed days of half-years (migration 014, `rollup_day_packs`), made from their day rows: the
 * insert of a pack per row of `halves` (item_id, zone, half), given as a relation; bindings: the
 * tenant, those of `halves`, the tenant again. A half-year without a day row gets no pack. Its day
 * rows are one index range scan, each day of the half-year joined to its row or to none.
 */
function insertPacks(halves: string): string {
  const packed = (column: string, send: string) => `string_agg(${send}(coalesce(d.${column}, 0)), ''::bytea order by k.day)`;
  return `insert into rollup_day_packs (tenant, item_id, zone, half, n, sum)
    select ?, h.item_id, h.zone, h.half, x.*
    from ${halves} as h cross join lateral (
      select ${packed("n", "int4send")}, ${packed("sum", "float8send")}
      from generate_series(h.half::timestamp, h.half + interval '6 months' - interval '1 day', interval '1 day') as k(day)
      left join (select period, n, sum from rollup_periods
                 where tenant = ? and item_id = h.item_id and zone = h.zone and grain = 'day' and period >= h.half and period < (h.half + interval '6 months')::date) as d
        on d.period = k.day::date
      having count(d.n) > 0) as x`;
}

/**
 * Makes again the packs of the half-years holding the local dates of `periods` (item_id, zone,
 * period, as a relation whose bindings are `bindings`), from their day rows just rebuilt.
 */
export async function rebuildPacks(trx: Knex, tenant: string, pace: Pace, periods: string, bindings: Knex.RawBinding[]): Promise<void> {
  const halves = `(select distinct a.item_id, a.zone, ${halfOf("a.period")} as half from ${periods} as a)`;
  await pace.run(() =>
    trx.raw(`delete from rollup_day_packs p using ${halves} as h where p.tenant = ? and p.item_id = h.item_id and p.zone = h.zone and p.half = h.half`, [...bindings, tenant]),
  );
  await pace.run(() => trx.raw(insertPacks(halves), [tenant, ...bindings, tenant]));
}

/** Packs every half-year of the zone's day rows of the tenant (its month rows name them): a zone's first build. */
export async function buildPacks(trx: Knex, tenant: string, zone: string): Promise<void> {
  const halves = `(select distinct item_id, zone, ${halfOf("period")} as half from rollup_periods where tenant = ? and zone = ? and grain = 'month')`;
  await trx.raw(insertPacks(halves), [tenant, tenant, zone, tenant]);
}
