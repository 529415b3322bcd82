import type { Knex } from "knex";
import type { Statement } from "../db/backend.js";
import { invalidRequest, ProblemError } from "../errors.js";
import { MAX_OFFSET } from "../input.js";
import { bucketStarts } from "./bucket-range.js";
import { bucketStart, calendarUnit, checkInterval, fixedLengthMs, type Interval } from "./buckets.js";
import { checkGapStrategy, fillGaps, type Bucket, type GapStrategy } from "./gaps.js";
import { filterPredicates } from "./filters.js";
import type { ResolvedRange } from "./periods.js";
import { rawSpan, rollupPlan } from "./rollup-plan.js";
import { closesBefore, reconcileForQuery, rollupBuckets, type BucketRow, type RollupSettings } from "./rollup-query.js";

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


/** A Map, so that no name from a request reaches an object's prototype (`toString`, `constructor`) or SQL. */
const SORT_COLUMNS = new Map<string, string>([
  ["timestamp", "ts"],
  ["value", "value"],
  ["sourceId", "source_id"],
]);

/** An object member of the options, or nothing; anything else is a 400 naming it. */
function member(value: unknown, path: string): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw invalidRequest(`${path.replace(/^queryOptions\./, "")} must be an object`, path);
  return value as Record<string, unknown>;
}

/** `pagination.limit` and `offset`, checked: a limit from 1 to MAX_LIMIT, an offset from 0 to MAX_OFFSET. */
function pageOf(options: QueryOptions): { limit: number; offset: number } {
  const pagination = member(options.pagination, "queryOptions.pagination") ?? {};
  const limit = pagination.limit ?? DEFAULT_LIMIT;
  const offset = pagination.offset ?? 0;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw invalidRequest(`pagination.limit must be a whole number from 1 to ${MAX_LIMIT}`, "queryOptions.pagination.limit");
  }
  if (typeof offset !== "number" || !Number.isInteger(offset) || offset < 0 || offset > MAX_OFFSET) {
    throw invalidRequest(`pagination.offset must be a whole number from 0 to ${MAX_OFFSET}`, "queryOptions.pagination.offset");
  }
  return { limit, offset };
}

/** `sorting.order` as SQL order terms; a trailing `-` means descending. Timestamp ascending by default. */
function orderTerms(sorting: unknown): { column: string; order: "asc" | "desc" }[] {
  const order = member(sorting, "queryOptions.sorting")?.order ?? ["timestamp"];
  if (!Array.isArray(order)) throw invalidRequest('sorting.order must be an array of sort keys, e.g. ["timestamp-"]', "queryOptions.sorting.order");
  const terms = order.map((key: unknown, i) => {
    if (typeof key !== "string") throw invalidRequest("a sort key is text: timestamp, value or sourceId, a trailing - for descending", `queryOptions.sorting.order[${i}]`);
    const descending = key.endsWith("-");
    const name = descending ? key.slice(0, -1) : key.replace(/\+$/, "");
    const column = SORT_COLUMNS.get(name);
    if (column === undefined) throw invalidRequest(`cannot sort by "${name}"; sort keys: timestamp, value, sourceId (a trailing - for descending)`, `queryOptions.sorting.order[${i}]`);
    return { column, order: descending ? ("desc" as const) : ("asc" as const) };
  });
  // A stable order: ties end on the event's key.
  for (const column of ["ts", "source_id"]) if (!terms.some((t) => t.column === column)) terms.push({ column, order: "asc" });
  return terms;
}

export interface EventRow {
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

export function eventJson(row: EventRow): EventJson {
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

/** The events of the items in `[from, to)` that pass the filter, as a subquery. */
export function eventsInRange(knex: Knex, tenant: string, itemIds: string[], range: ResolvedRange, options: QueryOptions): Knex.QueryBuilder {
  const query = knex("events")
    .where({ tenant })
    .whereIn("item_id", itemIds)
    .andWhere("ts", ">=", range.from.toJSDate())
    .andWhere("ts", "<", range.to.toJSDate());
  for (const predicate of filterPredicates(options.filter)) query.andWhereRaw(predicate.sql, predicate.bindings);
  return query;
}

/**
 * The raw events of each item in `[from, to)`, filtered, sorted and paged per item, in one
 * statement for all the items.
 */
export async function queryEvents(knex: Knex, tenant: string, itemIds: string[], range: ResolvedRange, options: QueryOptions = {}): Promise<Map<string, EventJson[]>> {
  const { limit, offset } = pageOf(options);
  const terms = orderTerms(options.sorting);
  const orderSql = terms.map((t) => `${t.column} ${t.order}`).join(", ");
  const ranked = eventsInRange(knex, tenant, itemIds, range, options).select(
    "item_id", "ts", "value", "source_id", "tags", "key_values", "tenant_codes", "entity_references", "meta_entry", "meta_exit", "meta_from", "meta_to",
    knex.raw(`row_number() over (partition by item_id order by ${orderSql}) as rn`),
  );
  const rows = (await knex
    .select("*")
    .from(ranked.as("r"))
    .where("rn", ">", offset)
    .andWhere("rn", "<=", offset + limit)
    .orderBy([{ column: "item_id" }, { column: "rn" }])) as (EventRow & { item_id: string })[];
  const series = new Map<string, EventJson[]>(itemIds.map((id) => [id, []]));
  for (const row of rows) series.get(row.item_id)?.push(eventJson(row));
  return series;
}

/** Each item's last event before `at` (the latest by time, then by source id): none for an item without one. */
export async function lastEvents(knex: Knex, tenant: string, itemIds: string[], at: Date): Promise<{ itemId: string; ts: Date; value: number }[]> {
  if (itemIds.length === 0) return [];
  const rows = (await knex("events")
    .where({ tenant })
    .whereIn("item_id", itemIds)
    .andWhere("ts", "<", at)
    .distinctOn("item_id")
    .orderBy([{ column: "item_id" }, { column: "ts", order: "desc" }, { column: "source_id", order: "desc" }])
    .select("item_id", "ts", "value")) as { item_id: string; ts: Date; value: number }[];
  return rows.map((r) => ({ itemId: r.item_id, ts: r.ts, value: r.value }));
}

/** Checks every query option's shape and values without running anything (a stored definition's timelines). */
export function checkQueryOptions(options: QueryOptions): void {
  if (options === null || typeof options !== "object" || Array.isArray(options)) throw invalidRequest("queryOptions must be an object", "queryOptions");
  pageOf(options);
  orderTerms(options.sorting);
  filterPredicates(options.filter);
  if (options.indexSet !== undefined && typeof options.indexSet !== "string") throw invalidRequest("indexSet must be the id of an IndexSet", "queryOptions.indexSet");
  const aggregation = member(options.aggregation, "queryOptions.aggregation") as QueryOptions["aggregation"];
  if (aggregation !== undefined) {
    if (aggregation.metric !== undefined && !(METRICS as readonly string[]).includes(aggregation.metric)) {
      throw invalidRequest(`unknown aggregation.metric "${aggregation.metric}"; one of: ${METRICS.join(", ")}`, "queryOptions.aggregation.metric");
    }
    if (aggregation.interval === undefined) throw invalidRequest("aggregation.interval is required", "queryOptions.aggregation.interval");
    checkInterval(aggregation.interval);
    if (aggregation.gapStrategy !== undefined) checkGapStrategy(aggregation.gapStrategy);
  }
}

/**
 * A bucket's sum (avg and sum add in double precision) passing ±1.8e308 is PostgreSQL's 22003: the
 * events' values are the cause, not the service, so it is a 422 naming the metric (the database's
 * error stays in the log).
 */
function overflow(err: unknown, metric: Metric): unknown {
  if ((err as { code?: unknown } | null)?.code !== "22003") return err;
  const message = `the values of a bucket add up beyond the range of a double (±1.8e308) for the metric ${metric}; use min, max, count, open or close, or filter the events`;
  return new ProblemError("INVALID_REQUEST", message, { status: 422, errors: [{ path: "queryOptions.aggregation.metric", message }], cause: err });
}

/** SQL for the start of the bucket holding the instant `column`, in the range's zone. */
function bucketStatement(interval: Interval, range: ResolvedRange, column: string): Statement {
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) {
    // Aligned on the first bucket's start, which is on the local wall clock's grid.
    const origin = new Date(bucketStart(range.from.toMillis(), interval, range.zone));
    return { sql: `date_bin(?::interval, ${column}, ?::timestamptz)`, bindings: [`${fixed / 60_000} minutes`, origin] };
  }
  return { sql: `date_trunc(?, ${column}, ?)`, bindings: [calendarUnit(interval)!, range.zone] };
}

/** The buckets of the raw events, grouped and aggregated in the database (`columns`). */
async function rawBuckets(knex: Knex, tenant: string, timeline: Timeline, range: ResolvedRange, options: QueryOptions, interval: Interval, columns: string[]) {
  const single = timeline.kind === "single";
  const bucket = bucketStatement(interval, range, "ts");
  const rows = (await knex
    .select(knex.raw(columns.join(", ")))
    .from(
      eventsInRange(knex, tenant, timeline.itemIds, range, options)
        .select(knex.raw(`${bucket.sql} as b`, bucket.bindings), "item_id", "ts", "value", "source_id")
        .as("e"),
    )
    .groupBy(single ? ["b"] : ["item_id", "b"])
    .orderBy("b")
    .catch((err: unknown) => {
      throw overflow(err, options.aggregation?.metric ?? "avg");
    })) as (BucketRow & { item: string; bucket: Date })[];
  const byKey = new Map<string, Map<number, BucketRow>>();
  // date_trunc labels a day whose midnight the clocks pass twice with the second midnight; the
  // bucket starts at the first (shared/SEMANTICS.md): the group is the same local period, relabelled.
  const calendar = fixedLengthMs(interval) === undefined;
  for (const row of rows) {
    const key = row.item;
    if (!byKey.has(key)) byKey.set(key, new Map());
    const start = calendar ? bucketStart(row.bucket.getTime(), interval, range.zone) : row.bucket.getTime();
    byKey.get(key)!.set(start, row);
  }
  return byKey;
}

/** Whose events one aggregated timeline holds. */
export type Timeline = { kind: "each"; itemIds: string[] } | { kind: "single"; itemIds: string[] };

/**
 * Events aggregated into calendar buckets (shared/SEMANTICS.md): one timeline per item, or one
 * over all of them (`single`). Grouping and the metric run in PostgreSQL, in one statement for
 * all the items; every bucket of the range is then emitted, empty ones included, and the gap
 * strategy fills them. The answer is keyed by item id, or by "" for a single timeline.
 */
export async function aggregateEvents(
  knex: Knex,
  tenant: string,
  timeline: Timeline,
  range: ResolvedRange,
  options: QueryOptions,
  rollups?: RollupSettings,
  checkRaw: (span: { from: number; to: number } | undefined) => void = () => {},
): Promise<Map<string, BucketJson[]>> {
  const aggregation = options.aggregation ?? {};
  const metric = aggregation.metric ?? "avg";
  if (!(METRICS as readonly string[]).includes(metric)) throw invalidRequest(`unknown aggregation.metric "${metric}"; one of: ${METRICS.join(", ")}`, "queryOptions.aggregation.metric");
  if (aggregation.interval === undefined) throw invalidRequest("aggregation.interval is required", "queryOptions.aggregation.interval");
  const interval = checkInterval(aggregation.interval);
  const gapStrategy = aggregation.gapStrategy === undefined ? undefined : checkGapStrategy(aggregation.gapStrategy);
  const starts = bucketStarts(range.from.toMillis(), range.to.toMillis(), interval, range.zone);
  const single = timeline.kind === "single";
  const keyOf = (itemId: string) => (single ? "" : itemId);

  const needs = (m: Metric[]) => m.includes(metric);
  const columns = [
    single ? "'' as item" : "item_id as item",
    "b as bucket",
    "count(*)::int as n",
    needs(["avg"]) ? "avg(value) as avg" : "null as avg",
    needs(["min"]) ? "min(value) as min" : "null as min",
    needs(["max"]) ? "max(value) as max" : "null as max",
    needs(["sum"]) ? "sum(value) as sum" : "null as sum",
    needs(["cardinality"]) ? "count(distinct value)::int as cardinality" : "0 as cardinality",
    // Ties at one instant: by sourceId (absent, '', first), then by item (pooled timelines) — never the order rows come in.
    needs(["open", "diff"]) ? "(array_agg(value order by ts, source_id, item_id))[1] as open" : "null as open",
    needs(["close", "diff"]) ? "(array_agg(value order by ts desc, source_id desc, item_id desc))[1] as close" : "null as close",
  ];
  const calendar = fixedLengthMs(interval) === undefined;
  const from = range.from.toMillis();
  const to = range.to.toMillis();
  const filtered = filterPredicates(options.filter).length > 0;
  const pieces = rollups === undefined ? undefined : rollupPlan({ from, to, zone: range.zone, interval, metric, filtered, starts, zones: rollups.zones, floor: rollups.floor?.getTime(), cellsOverRaw: rollups.cellsOverRaw });
  // The raw events read must still be kept (EVENTS_RETENTION_DAYS): a 422 where they are not.
  checkRaw(pieces === undefined ? { from, to } : rawSpan(pieces));
  let byKey: Map<string, Map<number, BucketRow>>;
  if (pieces !== undefined) {
    // Answered from the rollups (rollup-plan.ts), their marks over the range reconciled first.
    await reconcileForQuery(knex, tenant, timeline.itemIds, from, to, rollups!, metric === "diff");
    const relabel = (t: number) => (calendar ? bucketStart(t, interval, range.zone) : t);
    byKey = await rollupBuckets(knex, tenant, single, timeline.itemIds, pieces, interval, range.zone, metric, (column) => bucketStatement(interval, range, column), relabel, rollups!.dayRows !== true).catch(
      (err: unknown) => {
        throw overflow(err, metric);
      },
    );
    if (metric === "sum" || metric === "avg") {
      for (const buckets of byKey.values()) for (const row of buckets.values()) if (!Number.isFinite(row.sum)) throw overflow({ code: "22003" }, metric);
    }
  } else byKey = await rawBuckets(knex, tenant, timeline, range, options, interval, columns);

  // diff starts from the last event before the range, per timeline.
  let before = new Map<string, number>();
  if (metric === "diff" && pieces !== undefined && rollups!.floor !== undefined && from < rollups!.floor.getTime()) {
    // The raw events before the range may be gone: the last cell's close (the range starts on the quarter hour).
    before = await closesBefore(knex, tenant, single, timeline.itemIds, from);
  } else if (metric === "diff") {
    const query = knex("events")
      .where({ tenant })
      .whereIn("item_id", timeline.itemIds)
      .andWhere("ts", "<", range.from.toJSDate());
    for (const predicate of filterPredicates(options.filter)) query.andWhereRaw(predicate.sql, predicate.bindings);
    const last = (await (single
      ? query.orderBy([{ column: "ts", order: "desc" }, { column: "source_id", order: "desc" }, { column: "item_id", order: "desc" }]).limit(1).select(knex.raw("'' as item"), "value")
      : query.distinctOn("item_id").orderBy([{ column: "item_id" }, { column: "ts", order: "desc" }, { column: "source_id", order: "desc" }]).select("item_id as item", "value"))) as {
      item: string;
      value: number;
    }[];
    for (const row of last) before.set(row.item, row.value);
  }

  const answer = new Map<string, BucketJson[]>();
  for (const key of single ? [""] : timeline.itemIds.map(keyOf)) {
    const found = byKey.get(key) ?? new Map<number, BucketRow>();
    let previousClose: number | null = before.get(key) ?? null;
    const buckets: Bucket[] = starts.map((start) => {
      const row = found.get(start);
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
    answer.set(key, fillGaps(buckets, gapStrategy).map((b) => ({ timestamp: new Date(b.timestamp).toISOString(), value: b.value })));
  }
  return answer;
}
