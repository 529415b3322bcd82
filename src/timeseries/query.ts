import type { Knex } from "knex";
import { ProblemError } from "../errors.js";
import { bucketStart, bucketStarts, checkInterval, fixedLengthMs, type Interval } from "./buckets.js";
import { checkGapStrategy, fillGaps, type Bucket, type GapStrategy } from "./gaps.js";
import type { ResolvedRange } from "./periods.js";

export const METRICS = ["avg", "count", "min", "max", "sum", "diff", "cardinality", "open", "close"] as const;
export type Metric = (typeof METRICS)[number];

/** Spec §2.4 (filters arrive separately). */
export interface QueryOptions {
  pagination?: { limit?: number; offset?: number };
  sorting?: { order?: string[] };
  aggregation?: { metric?: Metric; interval?: Interval; gapStrategy?: GapStrategy };
  indexSet?: string;
  filter?: Record<string, unknown>;
}

export const DEFAULT_LIMIT = 1000;
export const MAX_LIMIT = 10_000;

export interface EventJson {
  timestamp: string;
  value: number;
  sourceId?: string;
  tags?: string[];
  keyValues?: Record<string, string>;
  tenantCodes?: Record<string, string>;
  entityReferences?: unknown[];
  entry?: string;
  exit?: string;
  from?: string;
  to?: string;
}

export interface BucketJson {
  timestamp: string;
  value: number | null;
}

function invalid(message: string, path: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", message, { errors: [{ path, message }] });
}

const SORT_COLUMNS: Record<string, string> = { timestamp: "ts", value: "value", sourceId: "source_id" };

/** `sorting.order` as SQL order terms; a trailing `-` means descending. Timestamp ascending by default. */
function orderTerms(order: string[] | undefined): { column: string; order: "asc" | "desc" }[] {
  const terms = (order ?? ["timestamp"]).map((key, i) => {
    const descending = key.endsWith("-");
    const name = descending ? key.slice(0, -1) : key.replace(/\+$/, "");
    const column = SORT_COLUMNS[name];
    if (column === undefined) throw invalid(`cannot sort by "${name}"; sort keys: timestamp, value, sourceId (a trailing - for descending)`, `queryOptions.sorting.order[${i}]`);
    return { column, order: descending ? ("desc" as const) : ("asc" as const) };
  });
  // A stable order: ties end on the event's key.
  for (const column of ["ts", "source_id"]) if (!terms.some((t) => t.column === column)) terms.push({ column, order: "asc" });
  return terms;
}

interface EventRow {
  ts: Date;
  value: number;
  source_id: string;
  tags: string[] | null;
  key_values: Record<string, string> | null;
  tenant_codes: Record<string, string> | null;
  entity_references: unknown[] | null;
  meta_entry: Date | null;
  meta_exit: Date | null;
  meta_from: Date | null;
  meta_to: Date | null;
}

function eventJson(row: EventRow): EventJson {
  const json: EventJson = { timestamp: row.ts.toISOString(), value: row.value };
  if (row.source_id !== "") json.sourceId = row.source_id;
  if (row.tags !== null) json.tags = row.tags;
  if (row.key_values !== null) json.keyValues = row.key_values;
  if (row.tenant_codes !== null) json.tenantCodes = row.tenant_codes;
  if (row.entity_references !== null) json.entityReferences = row.entity_references;
  if (row.meta_entry !== null) json.entry = row.meta_entry.toISOString();
  if (row.meta_exit !== null) json.exit = row.meta_exit.toISOString();
  if (row.meta_from !== null) json.from = row.meta_from.toISOString();
  if (row.meta_to !== null) json.to = row.meta_to.toISOString();
  return json;
}

/** The raw events of one item in `[from, to)`, sorted and paged. */
export async function queryEvents(knex: Knex, tenant: string, itemId: string, range: ResolvedRange, options: QueryOptions = {}): Promise<EventJson[]> {
  const limit = options.pagination?.limit ?? DEFAULT_LIMIT;
  const offset = options.pagination?.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw invalid(`pagination.limit must be a whole number from 1 to ${MAX_LIMIT}`, "queryOptions.pagination.limit");
  if (!Number.isInteger(offset) || offset < 0) throw invalid("pagination.offset must be a whole number from 0", "queryOptions.pagination.offset");
  const rows = (await knex("events")
    .where({ tenant, item_id: itemId })
    .andWhere("ts", ">=", range.from.toJSDate())
    .andWhere("ts", "<", range.to.toJSDate())
    .orderBy(orderTerms(options.sorting?.order))
    .limit(limit)
    .offset(offset)
    .select("ts", "value", "source_id", "tags", "key_values", "tenant_codes", "entity_references", "meta_entry", "meta_exit", "meta_from", "meta_to")) as EventRow[];
  return rows.map(eventJson);
}

/** SQL for the start of the bucket holding `ts`, in the range's zone. */
function bucketSql(knex: Knex, interval: Interval, range: ResolvedRange): Knex.Raw {
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) {
    // Aligned on the first bucket's start, which is on the local wall clock's grid.
    const origin = new Date(bucketStart(range.from.toMillis(), interval, range.zone));
    return knex.raw("date_bin(?::interval, ts, ?::timestamptz)", [`${fixed / 60_000} minutes`, origin]);
  }
  const unit = { Daily: "day", Weekly: "week", Monthly: "month", Quarterly: "quarter", Yearly: "year" }[interval as "Daily"];
  return knex.raw("date_trunc(?, ts, ?)", [unit, range.zone]);
}

interface BucketRow {
  bucket: Date;
  n: number;
  avg: number | null;
  min: number | null;
  max: number | null;
  sum: number | null;
  cardinality: number;
  open: number | null;
  close: number | null;
}

/**
 * One item's events aggregated into calendar buckets (shared/SEMANTICS.md). Grouping and the
 * metric run in PostgreSQL; every bucket of the range is then emitted, empty ones included, and
 * the gap strategy fills them.
 */
export async function aggregateEvents(knex: Knex, tenant: string, itemId: string, range: ResolvedRange, options: QueryOptions): Promise<BucketJson[]> {
  const aggregation = options.aggregation ?? {};
  const metric = aggregation.metric ?? "avg";
  if (!(METRICS as readonly string[]).includes(metric)) throw invalid(`unknown aggregation.metric "${metric}"; one of: ${METRICS.join(", ")}`, "queryOptions.aggregation.metric");
  if (aggregation.interval === undefined) throw invalid("aggregation.interval is required", "queryOptions.aggregation.interval");
  const interval = checkInterval(aggregation.interval);
  const gapStrategy = aggregation.gapStrategy === undefined ? undefined : checkGapStrategy(aggregation.gapStrategy);
  const starts = bucketStarts(range.from.toMillis(), range.to.toMillis(), interval, range.zone);

  const needs = (m: Metric[]) => m.includes(metric);
  const columns = [
    "count(*)::int as n",
    needs(["avg"]) ? "avg(value) as avg" : "null as avg",
    needs(["min"]) ? "min(value) as min" : "null as min",
    needs(["max"]) ? "max(value) as max" : "null as max",
    needs(["sum"]) ? "sum(value) as sum" : "null as sum",
    needs(["cardinality"]) ? "count(distinct value)::int as cardinality" : "0 as cardinality",
    needs(["open", "diff"]) ? "(array_agg(value order by ts, source_id))[1] as open" : "null as open",
    needs(["close", "diff"]) ? "(array_agg(value order by ts desc, source_id desc))[1] as close" : "null as close",
  ];
  const rows = (await knex
    .select(knex.raw(`b as bucket, ${columns.join(", ")}`))
    .from(
      knex("events")
        .where({ tenant, item_id: itemId })
        .andWhere("ts", ">=", range.from.toJSDate())
        .andWhere("ts", "<", range.to.toJSDate())
        .select(bucketSql(knex, interval, range).wrap("", " as b"), "ts", "value", "source_id")
        .as("e"),
    )
    .groupBy("b")
    .orderBy("b")) as BucketRow[];
  const byStart = new Map(rows.map((r) => [r.bucket.getTime(), r]));

  let previousClose: number | null = null;
  if (metric === "diff") {
    const before = (await knex("events")
      .where({ tenant, item_id: itemId })
      .andWhere("ts", "<", range.from.toJSDate())
      .orderBy([{ column: "ts", order: "desc" }, { column: "source_id", order: "desc" }])
      .first("value")) as { value: number } | undefined;
    previousClose = before?.value ?? null;
  }
  const buckets: Bucket[] = starts.map((start) => {
    const row = byStart.get(start);
    if (row === undefined) return { timestamp: start, value: metric === "count" || metric === "cardinality" ? 0 : null };
    switch (metric) {
      case "count":
        return { timestamp: start, value: row.n };
      case "diff": {
        const value = row.close! - (previousClose ?? row.open!);
        previousClose = row.close;
        return { timestamp: start, value };
      }
      default:
        return { timestamp: start, value: row[metric] === null ? null : Number(row[metric]) };
    }
  });
  return fillGaps(buckets, gapStrategy).map((b) => ({ timestamp: new Date(b.timestamp).toISOString(), value: b.value }));
}
