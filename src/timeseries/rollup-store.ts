import type { Knex } from "knex";
import { rawRows, type Statement } from "../db/backend.js";
import { storageOf } from "../db/storage.js";
import { DAY_MS } from "./calendar.js";
import { rebuildPacks } from "./rollup-packs.js";
import { Pace } from "./rollup-pace.js";
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
export const LOCK_CLASS = 270_027;
const MAX_DOUBLE = "1.7976931348623157e308";

/** An exact sum as a double, ±Infinity past the double's range (a query asking for it then answers the overflow's 422). */
function clampedSum(numeric: string): string {
  return `case when ${numeric} > ${MAX_DOUBLE} then 'Infinity'::float8 when ${numeric} < -${MAX_DOUBLE} then '-Infinity'::float8 else (${numeric})::float8 end`;
}

/** The aggregate columns of a rollup row made from finer rows `c` (cells or days). */
export const FROM_ROWS = `sum(c.n), ${clampedSum("sum(c.sum::numeric)")}, min(c.min), max(c.max),
  min(c.open_ts), (array_agg(c.open_source order by c.open_ts, c.open_source))[1], (array_agg(c.open order by c.open_ts, c.open_source))[1],
  max(c.close_ts), (array_agg(c.close_source order by c.close_ts desc, c.close_source desc))[1], (array_agg(c.close order by c.close_ts desc, c.close_source desc))[1]`;
export const ROW_COLUMNS = "n, sum, min, max, open_ts, open_source, open, close_ts, close_source, close";

/** The UTC day (`YYYY-MM-DD`) of an instant. */
export function utcDay(t: number): string {
  return new Date(Math.floor(t / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
}

const CELL_MS = 900_000;
/** The origin of the cells' 15-minute bins. */
const EPOCH = "timestamptz '2000-01-01T00:00:00Z'";

/** The days written: per item and UTC day, the first and the last quarter hour its events fall in (`lo` and `hi`, ISO instants of their starts), as columns. */
export interface WrittenDays {
  items: string[];
  days: string[];
  los: string[];
  his: string[];
}

/** The items and UTC days of the events written, each pair once with the quarter hours its events span (cheapest for events in key order: item, then time). */
export function writtenDays(events: readonly { itemId: string; timestamp: Date }[]): WrittenDays {
  const spans = new Map<string, { item: string; day: number; lo: number; hi: number }>();
  let last: { item: string; day: number; lo: number; hi: number } | undefined;
  for (const { itemId, timestamp } of events) {
    const t = timestamp.getTime();
    const day = Math.floor(t / DAY_MS);
    if (last === undefined || last.item !== itemId || last.day !== day) {
      const key = `${itemId}/${day}`;
      last = spans.get(key);
      if (last === undefined) spans.set(key, (last = { item: itemId, day, lo: t, hi: t }));
    }
    if (t < last.lo) last.lo = t;
    if (t > last.hi) last.hi = t;
  }
  const written: WrittenDays = { items: [], days: [], los: [], his: [] };
  for (const { item, day, lo, hi } of spans.values()) {
    written.items.push(item);
    written.days.push(utcDay(day * DAY_MS));
    written.los.push(new Date(Math.floor(lo / CELL_MS) * CELL_MS).toISOString());
    written.his.push(new Date(Math.floor(hi / CELL_MS) * CELL_MS).toISOString());
  }
  return written;
}

/**
 * The member `marked` of a statement's `WITH`, which marks the days written ({@link writtenDays}):
 * a write of events marks them in its own transaction, here in the same statement as its probe.
 */
export function markingMember(tenant: string, written: WrittenDays): Statement {
  return {
    sql: `marked as (insert into rollup_dirty (tenant, item_id, day, lo, hi)
            select ?, m.item_id, m.day, m.lo, m.hi from unnest(?::uuid[], ?::date[], ?::timestamptz[], ?::timestamptz[]) as m(item_id, day, lo, hi))`,
    bindings: [tenant, written.items, written.days, written.los, written.his],
  };
}

/** Deletes an item's events in `[from, to)` and marks the days of those it deleted; the count deleted. */
export async function deleteAndMark(knex: Knex, tenant: string, itemId: string, from: Date, to: Date): Promise<number> {
  const { rows } = (await knex.raw(
    `with deleted as (delete from events where tenant = ? and item_id = ? and ts >= ? and ts < ? returning ts),
          marked as (insert into rollup_dirty (tenant, item_id, day, lo, hi)
            select ?, ?::uuid, (ts at time zone 'UTC')::date, date_bin('15 minutes', min(ts), ${EPOCH}), date_bin('15 minutes', max(ts), ${EPOCH})
            from deleted group by 3)
     select count(*)::int as n from deleted`,
    [tenant, itemId, from, to, tenant, itemId],
  )) as { rows: { n: number }[] };
  return rows[0]?.n ?? 0;
}

/** Removes a deleted item's rollups and marks (its events are deleted in the same transaction). */
export async function forgetItem(knex: Knex, tenant: string, itemId: string): Promise<void> {
  for (const table of ["rollup_cells", "rollup_periods", "rollup_day_packs", "rollup_dirty"]) await knex(table).where({ tenant, item_id: itemId }).del();
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

/** A reconciling transaction past this long (times the statement bound) commits what it rebuilt and leaves the other marks to the next. */
const TRANSACTION_STATEMENTS = 20;

/**
 * Rebuilds the rollups of the marked days of the scope from the raw events and removes the marks
 * handled, in transactions of at most {@link RECONCILE_BATCH} marks (and, on a backend that bounds
 * background statements, of about {@link TRANSACTION_STATEMENTS} statements' time). Days ending at or
 * before `floor` (the first instant whose raw events are all kept, under a retention) are not
 * rebuilt: their events may be gone, their rollups are what remains; their marks are removed.
 * Answers the marks handled. `boundMs` is the backend's bound on a statement, unless given.
 */
export async function reconcile(knex: Knex, tenant: string, scope: ReconcileScope = {}, floor?: Date, boundMs = storageOf(knex).backgroundStatementMs): Promise<number> {
  const where = scopeWhere(tenant, scope);
  const pace = new Pace(boundMs);
  let handled = 0;
  for (;;) {
    const { n, all } = await knex.transaction(async (trx) => {
      await trx.raw("select pg_advisory_xact_lock(?, hashtext(?))", [LOCK_CLASS, tenant]);
      const marks = await rawRows<{ id: string; item_id: string; day: string; lo: number | null; hi: number | null }>(trx, {
        sql: `select id::text, item_id, day::text as day, date_part('epoch', lo) * 1000 as lo, date_part('epoch', hi) * 1000 as hi
              from rollup_dirty where ${where.sql} order by id limit ${RECONCILE_BATCH}`,
        bindings: where.bindings,
      });
      // The days to rebuild, each once, in the marks' order, with the marks that name it and the
      // quarter hours they span together, [from, to) (a mark without its span: the whole day).
      const days = new Map<string, { item: string; day: string; from: number; to: number; ids: string[] }>();
      const dropped: string[] = [];
      for (const m of marks) {
        if (floor !== undefined && Date.parse(`${m.day}T00:00:00Z`) + DAY_MS <= floor.getTime()) {
          dropped.push(m.id);
          continue;
        }
        const key = `${m.item_id}/${m.day}`;
        const start = Date.parse(`${m.day}T00:00:00Z`);
        const [from, to] = m.lo === null || m.hi === null ? [start, start + DAY_MS] : [m.lo, m.hi + CELL_MS];
        const found = days.get(key);
        if (found === undefined) days.set(key, { item: m.item_id, day: m.day, from, to, ids: [m.id] });
        else {
          found.from = Math.min(found.from, from);
          found.to = Math.max(found.to, to);
          found.ids.push(m.id);
        }
      }
      const done = [...dropped];
      const spans = [...days.values()];
      const zones = spans.length === 0 ? [] : ((await trx("rollup_zones").where({ tenant }).select("zone")) as { zone: string }[]).map((z) => z.zone);
      const started = performance.now();
      for (let at = 0; at < spans.length; ) {
        if (boundMs !== undefined && at > 0 && performance.now() - started > TRANSACTION_STATEMENTS * boundMs) break;
        const chunk = spans.slice(at, at + pace.span.marks);
        if (pace.span.slices === 1) {
          // Whole spans: the chunk's in one statement.
          await rebuildCells(trx, tenant, pace, chunk);
          pace.adapt();
        } else {
          // One day's span in slices, each as long as the pace says after the one before (all on the quarter hour).
          const { item, from: first, to: end } = chunk[0]!;
          for (let from = first; from < end; ) {
            const to = Math.min(end, from + DAY_MS / pace.span.slices);
            await rebuildCells(trx, tenant, pace, [{ item, from, to }]);
            pace.adapt();
            from = to;
          }
        }
        if (zones.length > 0) {
          await rebuildPeriods(trx, tenant, pace, chunk, zones);
          pace.adapt();
        }
        for (const d of chunk) done.push(...d.ids);
        at += chunk.length;
      }
      if (done.length > 0) await trx.raw("delete from rollup_dirty where tenant = ? and id = any(?::bigint[])", [tenant, done]);
      return { n: done.length, all: done.length === marks.length && marks.length < RECONCILE_BATCH };
    });
    handled += n;
    if (all) return handled;
  }
}

/**
 * An instant as PostgreSQL reads it. The end of the last day the service takes, 9999-12-31, is
 * 10000-01-01, which JavaScript writes `+010000-01-01T…` — text PostgreSQL refuses (PGlite's
 * binding of a Date is that text).
 */
function instantText(t: number): string {
  const iso = new Date(t).toISOString();
  return iso.startsWith("+") ? iso.slice(1).replace(/^0+/, "") : iso;
}

/** A time range of one item's events whose cells are rebuilt: `[from, to)`, on the quarter hour. */
interface CellRange {
  item: string;
  from: number;
  to: number;
}

/** The ranges of one group, those of an item that touch or overlap made one (consecutive marked days: one index range scan). */
function coalesced(group: CellRange[]): CellRange[] {
  const sorted = [...group].sort((x, y) => (x.item < y.item ? -1 : x.item > y.item ? 1 : x.from - y.from));
  const merged: CellRange[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && last.item === r.item && r.from <= last.to) {
      if (r.to > last.to) last.to = r.to;
    } else merged.push({ item: r.item, from: r.from, to: r.to });
  }
  return merged;
}

/**
 * Rebuilds the cells of the ranges from the events, in one statement: each range an
 * index range scan of its item's events, sorted once by cell and key. The first event of a cell in
 * key order (instant, then sourceId) is its open, the last its close, as the raw path breaks ties:
 * one sort for all cells, where an ordered aggregate sorted each cell four times.
 */
async function rebuildCells(trx: Knex, tenant: string, pace: Pace, ranges: CellRange[]): Promise<void> {
  const group = coalesced(ranges);
  const bounds = [group.map((r) => r.item), group.map((r) => instantText(r.from)), group.map((r) => instantText(r.to))];
  const m = "unnest(?::uuid[], ?::timestamptz[], ?::timestamptz[]) as m(item_id, lo, hi)";
  // Each range read by an index range scan of its own (a LATERAL subquery the planner may not pull
  // up): as a join, once the tables have statistics, PostgreSQL hashed the ranges and read every
  // cell (or event) of the tenant, 9 M rows filtered out for a chunk of 256 marks.
  await pace.run(() =>
    trx.raw(
      `delete from rollup_cells where tenant = ? and ctid = any(array(
         select r.ctid from ${m} cross join lateral (select c.ctid from rollup_cells c where c.tenant = ? and c.item_id = m.item_id and c.cell >= m.lo and c.cell < m.hi offset 0) as r))`,
      [tenant, ...bounds, tenant],
    ),
  );
  await pace.run(() =>
    trx.raw(
      `insert into rollup_cells (tenant, item_id, cell, ${ROW_COLUMNS})
       select ?, y.item_id, y.cell, y.n, ${clampedSum("y.sum")}, y.min, y.max, y.open_ts, y.open_source, y.open, y.close_ts, y.close_source, y.close
       from (select distinct on (x.item_id, x.cell) x.item_id, x.cell, count(*) over w as n, sum(x.value::numeric) over w as sum, min(x.value) over w as min, max(x.value) over w as max,
               x.ts as open_ts, x.source_id as open_source, x.value as open,
               last_value(x.ts) over w as close_ts, last_value(x.source_id) over w as close_source, last_value(x.value) over w as close
             from (select e.item_id, date_bin('15 minutes', e.ts, ${EPOCH}) as cell, e.ts, e.source_id, e.value
                   from ${m} cross join lateral (select e.item_id, e.ts, e.source_id, e.value from events e where e.tenant = ? and e.item_id = m.item_id and e.ts >= m.lo and e.ts < m.hi offset 0) as e) as x
             window w as (partition by x.item_id, x.cell order by x.ts, x.source_id rows between unbounded preceding and unbounded following)
             order by x.item_id, x.cell, x.ts, x.source_id) as y`,
      [tenant, ...bounds, tenant],
    ),
  );
}

/** Rebuilds the local days and months of the zones that hold the items' UTC days, from their cells. */
export async function rebuildPeriods(trx: Knex, tenant: string, pace: Pace, days: { item: string; day: string }[], zones: string[]): Promise<void> {
  const m = "unnest(?::uuid[], ?::date[]) as m(item_id, day)";
  const lo = "(m.day::timestamp at time zone 'UTC')";
  const hi = "((m.day + 1)::timestamp at time zone 'UTC')";
  // The local dates each marked UTC day overlaps, in each zone (two at most).
  const affected = `(select distinct m.item_id, z.zone, d::date as period
      from ${m} cross join unnest(?::text[]) as z(zone)
      cross join lateral generate_series((${lo} at time zone z.zone)::date, ((${hi} - interval '1 millisecond') at time zone z.zone)::date, interval '1 day') as d)`;
  const bindings = [days.map((d) => d.item), days.map((d) => d.day), zones];
  // A grain's periods removed, then made again from the finer rows `c` joined to them.
  const replace = async (grain: "day" | "month", periods: string, finer: string) => {
    const where = `p.tenant = ? and p.item_id = a.item_id and p.zone = a.zone and p.grain = '${grain}' and p.period = a.period`;
    await pace.run(() => trx.raw(`delete from rollup_periods p using ${periods} as a where ${where}`, [...bindings, tenant]));
    // Each period's finer rows read by an index range scan of their own (a lateral join): joined on
    // the item alone, every period met every finer row of its item.
    await pace.run(() =>
      trx.raw(
        `insert into rollup_periods (tenant, item_id, zone, grain, period, ${ROW_COLUMNS})
         select ?, a.item_id, a.zone, '${grain}', a.period, r.*
         from ${periods} as a cross join lateral (select ${FROM_ROWS} from ${finer} having count(*) > 0) as r(${ROW_COLUMNS})`,
        [tenant, ...bindings, tenant],
      ),
    );
  };
  await replace(
    "day",
    affected,
    `rollup_cells c where c.tenant = ? and c.item_id = a.item_id
       and c.cell >= (a.period::timestamp at time zone a.zone) - interval '1 day' and c.cell < ((a.period + 1)::timestamp at time zone a.zone) + interval '1 day'
       and (c.cell at time zone a.zone)::date = a.period`,
  );
  const months = `(select distinct a.item_id, a.zone, date_trunc('month', a.period)::date as period from ${affected} as a)`;
  await replace(
    "month",
    months,
    `rollup_periods c where c.tenant = ? and c.item_id = a.item_id and c.zone = a.zone and c.grain = 'day'
       and c.period >= a.period and c.period < (a.period + interval '1 month')::date`,
  );
  await rebuildPacks(trx, tenant, pace, `(select distinct a.item_id, a.zone, a.period from ${affected} as a)`, bindings);
}

/** Reconciles every tenant's marks (statements bounded as {@link reconcile}'s); answers how many were handled. */
export async function drainMarks(knex: Knex, floor?: Date, boundMs = storageOf(knex).backgroundStatementMs): Promise<number> {
  let handled = 0;
  for (;;) {
    const tenants = (await knex.raw("select distinct tenant from rollup_dirty limit 100")) as { rows: { tenant: string }[] };
    if (tenants.rows.length === 0) return handled;
    for (const { tenant } of tenants.rows) handled += await reconcile(knex, tenant, {}, floor, boundMs);
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
