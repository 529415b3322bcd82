import type { Knex } from "knex";
import { rawRows } from "../db/backend.js";
import { errorText } from "../errors.js";

/**
 * The events' rollups (migration 008, docs/decisions/2026-11-27-event-rollups.md), kept exact
 * through an invalidation log:
 *
 * - a write of events (an upload, a deleted range) adds to `rollup_dirty` a row per item and UTC
 *   day it touched, in its own transaction: a handful of rows per batch, no lock taken;
 * - {@link reconcile} rebuilds those days from the raw events — their 15-minute UTC cells, then the
 *   local days and months of every zone the tenant's rollups hold — and removes the rows it read;
 * - a query answered from rollups first reconciles the marks of its items and range, so its answer
 *   is never stale; {@link startRollupUpkeep} drains the rest in the background.
 *
 * Reconcilers of a tenant take turns (an advisory lock): one that read a mark rebuilds from events
 * at least as new as the mark, and a mark written meanwhile is not one it read, so it stays.
 */

/** Marks handled per reconciling transaction. */
const RECONCILE_BATCH = 5000;
/** How often the background drain runs. */
export const ROLLUP_DRAIN_EVERY_MS = 2000;
/** The advisory lock class of the rollups (the tenant's hash is the other key). */
const LOCK_CLASS = 270_027;
const DAY_MS = 86_400_000;
const MAX_DOUBLE = "1.7976931348623157e308";

/** An exact sum as a double, ±Infinity past the double's range (a query asking for it then answers the overflow's 422). */
function clampedSum(numeric: string): string {
  return `case when ${numeric} > ${MAX_DOUBLE} then 'Infinity'::float8 when ${numeric} < -${MAX_DOUBLE} then '-Infinity'::float8 else (${numeric})::float8 end`;
}

/** The aggregate columns of a rollup row made from finer rows `c` (cells or days). */
const FROM_ROWS = `sum(c.n), ${clampedSum("sum(c.sum::numeric)")}, min(c.min), max(c.max),
  min(c.open_ts), (array_agg(c.open_source order by c.open_ts, c.open_source))[1], (array_agg(c.open order by c.open_ts, c.open_source))[1],
  max(c.close_ts), (array_agg(c.close_source order by c.close_ts desc, c.close_source desc))[1], (array_agg(c.close order by c.close_ts desc, c.close_source desc))[1]`;
const ROW_COLUMNS = "n, sum, min, max, open_ts, open_source, open, close_ts, close_source, close";

/** The UTC day (`YYYY-MM-DD`) of an instant. */
export function utcDay(t: number): string {
  return new Date(Math.floor(t / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

/** Marks the UTC days of the events written (item ids with their timestamps in ms), each once. */
export async function markWritten(knex: Knex, tenant: string, events: { itemId: string; t: number }[]): Promise<void> {
  const seen = new Set<string>();
  const items: string[] = [];
  const days: string[] = [];
  for (const { itemId, t } of events) {
    const day = Math.floor(t / DAY_MS);
    const key = `${itemId}/${day}`;
    if (seen.has(key)) continue;
    seen.add(key);
    items.push(itemId);
    days.push(utcDay(t));
  }
  if (items.length === 0) return;
  await knex.raw("insert into rollup_dirty (tenant, item_id, day) select ?, m.item_id, m.day from unnest(?::uuid[], ?::date[]) as m(item_id, day)", [tenant, items, days]);
}

/** Deletes an item's events in `[from, to)` and marks the days of those it deleted; the count deleted. */
export async function deleteAndMark(knex: Knex, tenant: string, itemId: string, from: Date, to: Date): Promise<number> {
  const { rows } = (await knex.raw(
    `with deleted as (delete from events where tenant = ? and item_id = ? and ts >= ? and ts < ? returning ts),
          marked as (insert into rollup_dirty (tenant, item_id, day) select distinct ?, ?::uuid, (ts at time zone 'UTC')::date from deleted)
     select count(*)::int as n from deleted`,
    [tenant, itemId, from, to, tenant, itemId],
  )) as { rows: { n: number }[] };
  return rows[0]?.n ?? 0;
}

/** Removes a deleted item's rollups and marks (its events are deleted in the same transaction). */
export async function forgetItem(knex: Knex, tenant: string, itemId: string): Promise<void> {
  for (const table of ["rollup_cells", "rollup_periods", "rollup_dirty"]) await knex(table).where({ tenant, item_id: itemId }).del();
}

/** Which marks a reconcile handles: those of some items and UTC days, or all of a tenant's. */
export interface ReconcileScope {
  itemIds?: string[];
  /** First and last UTC day (`YYYY-MM-DD`), both included. */
  fromDay?: string;
  toDay?: string;
}

function scopeWhere(tenant: string, scope: ReconcileScope): { sql: string; bindings: Knex.RawBinding[] } {
  let sql = "tenant = ?";
  const bindings: Knex.RawBinding[] = [tenant];
  if (scope.itemIds !== undefined) {
    sql += " and item_id = any(?::uuid[])";
    bindings.push(scope.itemIds);
  }
  if (scope.fromDay !== undefined) {
    sql += " and day >= ?::date";
    bindings.push(scope.fromDay);
  }
  if (scope.toDay !== undefined) {
    sql += " and day <= ?::date";
    bindings.push(scope.toDay);
  }
  return { sql, bindings };
}

/** Whether the scope holds marks not reconciled yet (one index probe). */
export async function hasMarks(knex: Knex, tenant: string, scope: ReconcileScope): Promise<boolean> {
  const where = scopeWhere(tenant, scope);
  const rows = await rawRows<{ one: number }>(knex, { sql: `select 1 as one from rollup_dirty where ${where.sql} limit 1`, bindings: where.bindings });
  return rows.length > 0;
}

/**
 * Rebuilds the rollups of the marked days of the scope from the raw events and removes the marks
 * read, in transactions of {@link RECONCILE_BATCH} marks. Days ending at or before `floor` (the
 * first instant whose raw events are all kept, under a retention) are not rebuilt: their events
 * may be gone, their rollups are what remains; their marks are removed. Answers the marks handled.
 */
export async function reconcile(knex: Knex, tenant: string, scope: ReconcileScope = {}, floor?: Date): Promise<number> {
  const where = scopeWhere(tenant, scope);
  let handled = 0;
  for (;;) {
    const n = await knex.transaction(async (trx) => {
      await trx.raw("select pg_advisory_xact_lock(?, hashtext(?))", [LOCK_CLASS, tenant]);
      const marks = await rawRows<{ id: string; item_id: string; day: string }>(trx, {
        sql: `select id::text, item_id, day::text as day from rollup_dirty where ${where.sql} order by id limit ${RECONCILE_BATCH}`,
        bindings: where.bindings,
      });
      if (marks.length === 0) return 0;
      const live = new Map<string, { item: string; day: string }>();
      for (const m of marks) {
        if (floor !== undefined && Date.parse(`${m.day}T00:00:00Z`) + DAY_MS <= floor.getTime()) continue;
        live.set(`${m.item_id}/${m.day}`, { item: m.item_id, day: m.day });
      }
      if (live.size > 0) await rebuildDays(trx, tenant, [...live.values()]);
      await trx.raw("delete from rollup_dirty where tenant = ? and id = any(?::bigint[])", [tenant, marks.map((m) => m.id)]);
      return marks.length;
    });
    handled += n;
    if (n < RECONCILE_BATCH) return handled;
  }
}

/** Rebuilds the cells of the items' UTC days from the events, then the local days and months of the tenant's zones that hold them. */
async function rebuildDays(trx: Knex, tenant: string, days: { item: string; day: string }[]): Promise<void> {
  const marks = [days.map((d) => d.item), days.map((d) => d.day)];
  const m = "unnest(?::uuid[], ?::date[]) as m(item_id, day)";
  const lo = "(m.day::timestamp at time zone 'UTC')";
  const hi = "((m.day + 1)::timestamp at time zone 'UTC')";
  await trx.raw(`delete from rollup_cells c using ${m} where c.tenant = ? and c.item_id = m.item_id and c.cell >= ${lo} and c.cell < ${hi}`, [...marks, tenant]);
  await trx.raw(
    `insert into rollup_cells (tenant, item_id, cell, ${ROW_COLUMNS})
     select ?, e.item_id, date_bin('15 minutes', e.ts, timestamptz '2000-01-01T00:00:00Z') as cell, count(*), ${clampedSum("sum(e.value::numeric)")}, min(e.value), max(e.value),
       min(e.ts), (array_agg(e.source_id order by e.ts, e.source_id))[1], (array_agg(e.value order by e.ts, e.source_id))[1],
       max(e.ts), (array_agg(e.source_id order by e.ts desc, e.source_id desc))[1], (array_agg(e.value order by e.ts desc, e.source_id desc))[1]
     from ${m} join events e on e.tenant = ? and e.item_id = m.item_id and e.ts >= ${lo} and e.ts < ${hi}
     group by e.item_id, cell`,
    [tenant, ...marks, tenant],
  );
  const zones = (await trx("rollup_zones").where({ tenant }).select("zone")) as { zone: string }[];
  if (zones.length === 0) return;
  // The local dates each marked UTC day overlaps, in each zone (two at most).
  const affected = `(select distinct m.item_id, z.zone, d::date as period
      from ${m} cross join unnest(?::text[]) as z(zone)
      cross join lateral generate_series((${lo} at time zone z.zone)::date, ((${hi} - interval '1 millisecond') at time zone z.zone)::date, interval '1 day') as d)`;
  const bindings = [...marks, zones.map((z) => z.zone)];
  await trx.raw(
    `delete from rollup_periods p using ${affected} as a where p.tenant = ? and p.item_id = a.item_id and p.zone = a.zone and p.grain = 'day' and p.period = a.period`,
    [...bindings, tenant],
  );
  await trx.raw(
    `insert into rollup_periods (tenant, item_id, zone, grain, period, ${ROW_COLUMNS})
     select ?, a.item_id, a.zone, 'day', a.period, ${FROM_ROWS}
     from ${affected} as a join rollup_cells c on c.tenant = ? and c.item_id = a.item_id
       and c.cell >= (a.period::timestamp at time zone a.zone) - interval '1 day' and c.cell < ((a.period + 1)::timestamp at time zone a.zone) + interval '1 day'
       and (c.cell at time zone a.zone)::date = a.period
     group by a.item_id, a.zone, a.period`,
    [tenant, ...bindings, tenant],
  );
  const months = `(select distinct a.item_id, a.zone, date_trunc('month', a.period)::date as period from ${affected} as a)`;
  await trx.raw(
    `delete from rollup_periods p using ${months} as a where p.tenant = ? and p.item_id = a.item_id and p.zone = a.zone and p.grain = 'month' and p.period = a.period`,
    [...bindings, tenant],
  );
  await trx.raw(
    `insert into rollup_periods (tenant, item_id, zone, grain, period, ${ROW_COLUMNS})
     select ?, a.item_id, a.zone, 'month', a.period, ${FROM_ROWS}
     from ${months} as a join rollup_periods c on c.tenant = ? and c.item_id = a.item_id and c.zone = a.zone and c.grain = 'day'
       and c.period >= a.period and c.period < (a.period + interval '1 month')::date
     group by a.item_id, a.zone, a.period`,
    [tenant, ...bindings, tenant],
  );
}

const builtZones = new WeakMap<Knex, Set<string>>();

/**
 * Makes sure the tenant's rollups hold the local days and months of `zone`: built once from its
 * cells (under the tenant's reconcile lock), then kept by every reconcile. Cached per process.
 */
export async function ensureZone(knex: Knex, tenant: string, zone: string): Promise<void> {
  let built = builtZones.get(knex);
  if (built === undefined) builtZones.set(knex, (built = new Set()));
  const key = `${tenant}\u0000${zone}`;
  if (built.has(key)) return;
  await knex.transaction(async (trx) => {
    const found = await trx("rollup_zones").where({ tenant, zone }).first();
    if (found !== undefined) return;
    await trx.raw("select pg_advisory_xact_lock(?, hashtext(?))", [LOCK_CLASS, tenant]);
    if ((await trx("rollup_zones").where({ tenant, zone }).first()) !== undefined) return;
    await trx("rollup_periods").where({ tenant, zone }).del();
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
    await trx("rollup_zones").insert({ tenant, zone });
  });
  built.add(key);
}

/** Reconciles every tenant's marks; answers how many were handled. */
export async function drainMarks(knex: Knex, floor?: Date): Promise<number> {
  let handled = 0;
  for (;;) {
    const tenants = (await knex.raw("select distinct tenant from rollup_dirty limit 100")) as { rows: { tenant: string }[] };
    if (tenants.rows.length === 0) return handled;
    for (const { tenant } of tenants.rows) handled += await reconcile(knex, tenant, {}, floor);
  }
}

export interface RollupKeeper {
  stop(): Promise<void>;
}

/** Drains the marks every {@link ROLLUP_DRAIN_EVERY_MS}; `floor` at each round (see {@link reconcile}). */
export function startRollupUpkeep(knex: Knex, options: { floor?: () => Date | undefined; onWarning?: (message: string) => void }): RollupKeeper {
  let running: Promise<void> | undefined;
  const round = () => {
    running ??= drainMarks(knex, options.floor?.())
      .then(
        () => undefined,
        (err: unknown) => options.onWarning?.(`the rollups' reconcile failed: ${errorText(err)}`),
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const timer = setInterval(() => void round(), ROLLUP_DRAIN_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      if (running !== undefined) await running;
    },
  };
}
