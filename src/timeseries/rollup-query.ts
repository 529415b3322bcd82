import { endianness } from "node:os";
import type { Knex } from "knex";
import { rawRows, type Statement } from "../db/backend.js";
import { calendarPeriodStart, calendarUnit, type Interval } from "./buckets.js";
import { daysFromCivil, DAY_MS, periodIndex, type CalendarUnit } from "./calendar.js";
import type { Piece } from "./rollup-plan.js";
import { hasMarks, reconcile, utcDay } from "./rollup-store.js";
import { ensureZone } from "./rollup-zones.js";
import { offsetMs } from "./zone-offset.js";

/** A bucket's aggregates (the raw path's row, and the rollups' merged one). */
export interface BucketRow {
  n: number;
  avg: number | null;
  min: number | null;
  max: number | null;
  sum: number | null;
  cardinality: number;
  open: number | null;
  close: number | null;
}

/** What the rollups need from the service: the zones they hold days and months of, and the retention floor. */
export interface RollupSettings {
  zones: readonly string[];
  /** The first instant whose raw events are all kept (a retention), before which the rollups are not rebuilt. */
  floor?: Date;
  /** Answer a plan of 15-minute cells alone from the cells even where the raw events are kept (rollup-plan.ts). */
  cellsOverRaw?: boolean;
  /** Read count, sum and avg of local days from the day rows rather than from their packs (the bench and the tests compare both). */
  dayRows?: boolean;
}

interface PieceRow {
  item: string;
  /** An instant (raw events, cells), a local date `YYYY-MM-DD` (days, months), or a bucket's start already (packed days). */
  bucket: Date | string | number;
  n: number | string;
  sum: number | null;
  min: number | null;
  max: number | null;
  open: number | null;
  close: number | null;
}

/** The local date (`YYYY-MM-DD`) holding instant `t` in `zone`. */
function localDate(t: number, zone: string): string {
  return new Date(t + offsetMs(zone, t)).toISOString().slice(0, 10);
}

/** The day number (0 = 1970-01-01) of a date `YYYY-MM-DD`. */
function dayNumber(date: string): number {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  return daysFromCivil(y, m, d);
}

/**
 * Big-endian int4s or float8s in base64 text (PostgreSQL's `encode(…, 'base64')`, its line breaks
 * skipped), decoded into `scratch` (aligned: its own memory) and put in this machine's byte order
 * by native code: the adding up is then plain typed-array arithmetic. Answers how many values.
 */
function decodeInto(scratch: Buffer, base64: string, width: 4 | 8): number {
  const size = scratch.write(base64, 0, "base64");
  if (LITTLE_ENDIAN) {
    if (width === 4) scratch.subarray(0, size).swap32();
    else scratch.subarray(0, size).swap64();
  }
  return size / width;
}
const LITTLE_ENDIAN = endianness() === "LE";
/** Room for a pack's column: 184 days of float8. */
const PACK_BYTES = 184 * 8;

/** Bucket starts of local days, by zone, unit and day number: each a time-zone lookup or two (zone-offset.ts), asked again by every portfolio query of the range. */
const dayStarts = new Map<string, number>();
const DAY_STARTS_KEPT = 100_000;

/** The start of the `unit` bucket holding local day `day` (a day number) in `zone`. */
function dayBucketStart(day: number, unit: CalendarUnit, zone: string): number {
  const key = `${zone}\u0000${unit}\u0000${day}`;
  let start = dayStarts.get(key);
  if (start === undefined) {
    if (dayStarts.size >= DAY_STARTS_KEPT) dayStarts.clear();
    start = calendarPeriodStart(periodIndex(day * DAY_MS, unit), unit, zone);
    dayStarts.set(key, start);
  }
  return start;
}

interface PackRow {
  item: string;
  /** The half-year's first day, as a day number. */
  half: number;
  /** The packed columns in base64 (see {@link packedDays}). */
  n: string;
  v: string | null;
}

/**
 * The local days `[from, to)` of a piece read from the half-years' packed days (migration 014): a
 * row per item and half-year, its days added up here, per timeline and day, into a row per timeline
 * and bucket. What the day rows would answer for count, sum and avg, from 2 rows per item over a
 * year instead of 365 (docs/decisions/2026-11-28-rollup-day-packs.md). The day sums are added in day
 * order per timeline, not in the day rows' order: the same doubles, another order.
 */
async function packedDays(knex: Knex, tenant: string, single: boolean, itemIds: string[], from: string, to: string, unit: CalendarUnit, zone: string, metric: string): Promise<PieceRow[]> {
  const column = metric === "count" ? undefined : "sum";
  // In base64: a bytea comes as hex text, twice its size, made into a string and decoded again — most
  // of the service's own time in a portfolio's Daily answer; base64 is a third of that size
  // (bench/RESULTS.md, Rollups). (The driver's binary format cannot carry bytes: pg decodes every
  // field as UTF-8 text first.)
  const rows = await rawRows<PackRow>(knex, {
    sql: `select ${single ? "''" : "item_id::text"} as item, (half - date '1970-01-01')::int4 as half, encode(n, 'base64') as n, ${column === undefined ? "null" : `encode(${column}, 'base64')`} as v
          from rollup_day_packs where tenant = ? and item_id = any(?::uuid[]) and zone = ? and half > (?::date - interval '6 months') and half < ?::date`,
    bindings: [tenant, itemIds, zone, from, to],
  });
  const first = dayNumber(from);
  const days = dayNumber(to) - first;
  // Per timeline: count and value of each day of the range.
  const sums = new Map<string, { n: Float64Array; v: Float64Array }>();
  const [nBytes, vBytes] = [Buffer.alloc(PACK_BYTES), Buffer.alloc(PACK_BYTES)];
  const [ns, vs] = [new Int32Array(nBytes.buffer, nBytes.byteOffset, PACK_BYTES / 4), new Float64Array(vBytes.buffer, vBytes.byteOffset, PACK_BYTES / 8)];
  for (const row of rows) {
    let acc = sums.get(row.item);
    if (acc === undefined) {
      acc = { n: new Float64Array(days), v: new Float64Array(days) };
      sums.set(row.item, acc);
    }
    const length = decodeInto(nBytes, row.n, 4);
    if (row.v !== null) decodeInto(vBytes, row.v, 8);
    else vs.fill(0);
    const start = row.half - first;
    const lo = Math.max(0, -start);
    const hi = Math.min(length, days - start);
    const [n, v] = [acc.n, acc.v];
    for (let k = lo; k < hi; k++) {
      const count = ns[k]!;
      if (count === 0) continue;
      n[start + k]! += count;
      v[start + k]! += vs[k]!;
    }
  }
  // A bucket's start per day (the same for every timeline).
  const starts: number[] = [];
  for (let k = 0; k < days; k++) starts.push(dayBucketStart(first + k, unit, zone));
  const out: PieceRow[] = [];
  for (const [item, acc] of sums) {
    for (let k = 0; k < days; k++) {
      const n = acc.n[k]!;
      if (n === 0) continue;
      out.push({ item, bucket: starts[k]!, n, sum: column === "sum" ? acc.v[k]! : null, min: null, max: null, open: null, close: null });
    }
  }
  return out;
}

/**
 * Reconciles the marks the answer depends on: those of the items over the range's UTC days, a
 * day either side (a local day spans two UTC days), or every earlier one too for `diff` (its
 * value before the range is the last cell before it).
 */
export async function reconcileForQuery(knex: Knex, tenant: string, itemIds: string[], from: number, to: number, settings: RollupSettings, sinceStart: boolean): Promise<void> {
  const scope = { itemIds, fromDay: sinceStart ? undefined : utcDay(from - DAY_MS), toDay: utcDay(to + DAY_MS) };
  // A tenant without marks (drained) is one probe that sends no item ids; then the marks of the scope.
  if ((await hasMarks(knex, tenant, {})) && (await hasMarks(knex, tenant, scope))) await reconcile(knex, tenant, scope, settings.floor);
}

/**
 * The buckets of the pieces, merged: per timeline key (the item, or "" for a single timeline),
 * per bucket start. Pieces are disjoint and in time order, so a bucket's open is the first piece's
 * and its close the last's. `bucketOf(column)` is the raw path's bucket of an instant column.
 */
export async function rollupBuckets(
  knex: Knex,
  tenant: string,
  single: boolean,
  itemIds: string[],
  pieces: Piece[],
  interval: Interval,
  zone: string,
  metric: string,
  bucketOf: (column: string) => Statement,
  relabel: (t: number) => number,
  packs = true,
): Promise<Map<string, Map<number, BucketRow>>> {
  if (pieces.some((p) => p.source === "days" || p.source === "months")) await ensureZone(knex, tenant, zone);
  const unit = calendarUnit(interval);
  const edges = metric === "open" || metric === "close" || metric === "diff";
  const item = single ? "'' as item" : "item_id as item";
  const group = single ? "group by bucket" : "group by item_id, bucket";
  const results = await Promise.all(
    pieces.map((piece) => {
      if (piece.source === "raw") {
        const b = bucketOf("ts");
        const columns = `${item}, ${b.sql} as bucket, count(*) as n, sum(value) as sum, min(value) as min, max(value) as max, ${
          edges
            ? "(array_agg(value order by ts, source_id, item_id))[1] as open, (array_agg(value order by ts desc, source_id desc, item_id desc))[1] as close"
            : "null as open, null as close"
        }`;
        return rawRows<PieceRow>(knex, {
          sql: `select ${columns} from events where tenant = ? and item_id = any(?::uuid[]) and ts >= ? and ts < ? ${group}`,
          bindings: [...b.bindings, tenant, itemIds, new Date(piece.from), new Date(piece.to)],
        });
      }
      const merged = `sum(n) as n, sum(sum) as sum, min(min) as min, max(max) as max, ${
        edges
          ? "(array_agg(open order by open_ts, open_source, item_id))[1] as open, (array_agg(close order by close_ts desc, close_source desc, item_id desc))[1] as close"
          : "null as open, null as close"
      }`;
      if (piece.source === "cells") {
        const b = bucketOf("cell");
        return rawRows<PieceRow>(knex, {
          sql: `select ${item}, ${b.sql} as bucket, ${merged} from rollup_cells where tenant = ? and item_id = any(?::uuid[]) and cell >= ? and cell < ? ${group}`,
          bindings: [...b.bindings, tenant, itemIds, new Date(piece.from), new Date(piece.to)],
        });
      }
      if (piece.source === "days" && packs && (metric === "count" || metric === "sum" || metric === "avg")) return packedDays(knex, tenant, single, itemIds, localDate(piece.from, zone), localDate(piece.to, zone), unit!, zone, metric);
      // Grouped on the local date (a day's own date needs no truncation), written as text once per bucket.
      const period = unit === "day" ? { sql: "period", bindings: [] } : { sql: "date_trunc(?, period::timestamp)::date", bindings: [unit!] };
      return rawRows<PieceRow>(knex, {
        sql: `select item, to_char(bucket, 'YYYY-MM-DD') as bucket, n, sum, min, max, open, close from (
                select ${item}, ${period.sql} as bucket, ${merged} from rollup_periods
                where tenant = ? and item_id = any(?::uuid[]) and zone = ? and grain = ? and period >= ?::date and period < ?::date ${group}) as g`,
        bindings: [...period.bindings, tenant, itemIds, zone, piece.source === "days" ? "day" : "month", localDate(piece.from, zone), localDate(piece.to, zone)],
      });
    }),
  );
  const byKey = new Map<string, Map<number, BucketRow>>();
  for (const rows of results) {
    for (const row of rows) {
      let start: number;
      if (typeof row.bucket === "number") start = row.bucket;
      else if (typeof row.bucket === "string") {
        const [y, m, d] = row.bucket.split("-").map(Number) as [number, number, number];
        start = calendarPeriodStart(periodIndex(daysFromCivil(y, m, d) * DAY_MS, unit!), unit!, zone);
      } else start = relabel(row.bucket.getTime());
      let buckets = byKey.get(row.item);
      if (buckets === undefined) byKey.set(row.item, (buckets = new Map()));
      const n = Number(row.n);
      const sum = row.sum === null ? null : Number(row.sum);
      const found = buckets.get(start);
      if (found === undefined) {
        buckets.set(start, { n, sum, avg: null, min: row.min, max: row.max, cardinality: 0, open: row.open, close: row.close });
        continue;
      }
      found.n += n;
      found.sum = found.sum === null || sum === null ? null : found.sum + sum;
      // Packed days carry only the metric's value: null in the others.
      found.min = found.min === null ? row.min : row.min === null ? found.min : Math.min(found.min, row.min);
      found.max = found.max === null ? row.max : row.max === null ? found.max : Math.max(found.max, row.max);
      found.close = row.close;
    }
  }
  for (const buckets of byKey.values()) for (const row of buckets.values()) row.avg = row.sum === null ? null : row.sum / row.n;
  return byKey;
}

/** Each timeline's last value before `at` (on the quarter hour), from the cells: `diff` before a range whose raw events are gone. */
export async function closesBefore(knex: Knex, tenant: string, single: boolean, itemIds: string[], at: number): Promise<Map<string, number>> {
  const rows = await rawRows<{ item: string; value: number }>(knex, {
    sql: `select ${single ? "''" : "x.item_id"} as item, x.close as value
          from unnest(?::uuid[]) as i(id)
          cross join lateral (select item_id, close_ts, close_source, close from rollup_cells where tenant = ? and item_id = i.id and cell < ? order by cell desc limit 1) as x
          order by x.close_ts desc, x.close_source desc, x.item_id desc ${single ? "limit 1" : ""}`,
    bindings: [itemIds, tenant, new Date(at)],
  });
  return new Map(rows.map((r) => [r.item, r.value]));
}
