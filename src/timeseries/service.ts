import type { Knex } from "knex";
import { DateTime } from "luxon";
import { invalidRequest, ProblemError, type ProblemDetail } from "../errors.js";
import { definingCalculation, indexSetItems, itemActions, missingItems } from "../graph/items.js";
import { isUuid, MAX_INSTANT_MS } from "../input.js";
import { deleteEvents, latestEvents, streamEvents } from "./export.js";
import { ingestEvents, type IngestOptions, type IngestResult } from "./ingest.js";
import { resolveEventDateRange, type EventDateRange, type ResolvedRange } from "./periods.js";
import { aggregateEvents, checkQueryOptions, lastEvents, queryEvents, type BucketJson, type EventJson, type QueryOptions, type Timeline } from "./query.js";
import { checkRetention, rollupFloor, type QueryNotes } from "./retention.js";

export const QUERY_TYPES = ["EVENTS", "AGGREGATION", "SINGLEAGGREGATION"] as const;
export type QueryType = (typeof QUERY_TYPES)[number];

export interface SeriesRequest {
  eventDateRange?: EventDateRange;
  queryOptions?: QueryOptions;
}

export type SeriesAnswer = { events: EventJson[] } | { buckets: BucketJson[] };


/** What is wrong with a series request, found without running it (paths as in a request body). */
export function seriesRequestProblems(request: SeriesRequest): ProblemDetail[] {
  const problems: ProblemDetail[] = [];
  const collect = (check: () => void) => {
    try {
      check();
    } catch (err) {
      if (!(err instanceof ProblemError)) throw err;
      problems.push(...(err.errors ?? [{ message: err.message }]));
    }
  };
  // The zone given, or any valid one: only the shape is checked here.
  collect(() => resolveEventDateRange(request.eventDateRange, new Date(), "UTC"));
  // Absent is no options; anything else, null included, must be an object.
  collect(() => checkQueryOptions(request.queryOptions === undefined ? {} : request.queryOptions));
  return problems;
}

/**
 * The item ids of a series read, lower-cased, each once. Every read that takes ids from outside
 * (a transform's `$events()`, a timeline, a calculation's scope) passes here, so an id that is not a
 * uuid is the caller's `400`, never a statement the database refuses with a 500.
 */
function distinctItemIds(itemIds: readonly unknown[]): string[] {
  itemIds.forEach((id, i) => {
    if (!isUuid(id)) throw invalidRequest("must be the uuid of an Item", `itemIds[${i}]`);
  });
  return [...new Set((itemIds as string[]).map((id) => id.toLowerCase()))];
}

/** Computes a derived series: the calculation named by an Item's ItemDefinition (given by the composition root). */
export type Deriver = (tenant: string, calculationExternalId: string, request: SeriesRequest) => Promise<SeriesAnswer | { value: number | null }>;

/**
 * Time-series queries of a tenant: one item, many items, or one timeline over many (contract §4).
 * Derived items (itemAction CALCULATE) are answered by `derive`; without it (the reads that
 * calculations themselves make) asking for one is a programming error. The composition root
 * builds a reader without it for the calculations, then this one with them: no late wiring.
 */
export class TimeSeries {
  constructor(
    private readonly knex: Knex,
    readonly defaultZone: string,
    /** The current instant; taken once per request (tests pass a fixed one). */
    private readonly clock: () => Date = () => new Date(),
    private readonly derive?: Deriver,
    /** EVENTS_RETENTION_DAYS: ranges reaching before the horizon are checked ({@link checkRetention}). */
    private readonly retentionDays?: number,
    /** ROLLUP_ZONES: the zones whose local days and months the rollups hold (rollup-store.ts). */
    private readonly rollupZones: readonly string[] = ["UTC"],
  ) {}

  /** The request's range at `now`; a read of raw events checks it against the retention horizon (noted in `notes`). */
  private rangeOf(request: SeriesRequest, now: Date, notes?: QueryNotes, aggregated = false): ResolvedRange {
    const range = resolveEventDateRange(request.eventDateRange, now, this.defaultZone);
    // An aggregation checks the part it reads from raw events, once it knows what the rollups answer.
    if (!aggregated) checkRetention({ from: range.from.toMillis(), to: range.to.toMillis() }, this.retentionDays, now, notes);
    return range;
  }

  /** Aggregated buckets of one timeline per item, or one over all of them, from the rollups where they tile the range. */
  private aggregate(tenant: string, timeline: Timeline, range: ResolvedRange, options: QueryOptions, now: Date, notes?: QueryNotes): Promise<Map<string, BucketJson[]>> {
    const rollups = { zones: this.rollupZones, floor: rollupFloor(this.retentionDays, now) };
    return aggregateEvents(this.knex, tenant, timeline, range, options, rollups, (span) => checkRetention(span, this.retentionDays, now, notes));
  }

  /** `POST /events` and `POST /items/{itemId}/events`: stores an upload's rows (see {@link ingestEvents}). */
  ingest(tenant: string, rows: AsyncIterable<unknown> | Iterable<unknown>, options: IngestOptions = {}): Promise<IngestResult> {
    return ingestEvents(this.knex, tenant, rows, options);
  }

  /** `POST /items/{itemId}/events/query`: raw events, or buckets when an aggregation is asked for. */
  async itemQuery(tenant: string, itemId: string, request: SeriesRequest, notes?: QueryNotes): Promise<SeriesAnswer | { value: number | null }> {
    if (!isUuid(itemId)) throw invalidRequest("itemId must be the uuid of an Item", "itemId");
    const id = itemId.toLowerCase();
    const items = await itemActions(this.knex, tenant, [id]);
    if (!items.has(id)) throw invalidRequest(`there is no Item ${id} in this tenant`, "itemId", 404);
    if (items.get(id) === "CALCULATE") return this.derived(tenant, id, request);
    return (await this.series(tenant, [id], request, undefined, notes)).get(id)!;
  }

  /**
   * A derived item's series: its `definedBy` ItemDefinition names a calculation definition
   * (attribute `calculationDefinition`), calculated with the request's date range and options.
   */
  private async derived(tenant: string, itemId: string, request: SeriesRequest): Promise<SeriesAnswer | { value: number | null }> {
    const name = await definingCalculation(this.knex, tenant, itemId);
    if (name === undefined) {
      throw invalidRequest(`Item ${itemId} is derived (itemAction CALCULATE) but has no definedBy link to an ItemDefinition naming a calculationDefinition`, "itemId", 422);
    }
    if (this.derive === undefined) throw new Error("derived items are not wired");
    return this.derive(tenant, name, request);
  }

  /**
   * Series of many items in one statement: each item's raw events, or each item's buckets when an
   * aggregation is asked for. The transform's timelines use this, one call for all their items.
   */
  async series(tenant: string, itemIds: string[], request: SeriesRequest, now: Date = this.clock(), notes?: QueryNotes): Promise<Map<string, SeriesAnswer>> {
    const aggregated = request.queryOptions?.aggregation !== undefined;
    const range = this.rangeOf(request, now, notes, aggregated);
    const options = request.queryOptions ?? {};
    checkQueryOptions(options);
    const ids = distinctItemIds(itemIds);
    const answer = new Map<string, SeriesAnswer>();
    if (aggregated) {
      for (const [id, buckets] of await this.aggregate(tenant, { kind: "each", itemIds: ids }, range, options, now, notes)) answer.set(id, { buckets });
    } else {
      for (const [id, events] of await queryEvents(this.knex, tenant, ids, range, options)) answer.set(id, { events });
    }
    return answer;
  }

  /** One aggregated timeline over all the events of the items (a calculation's open/close across items). */
  async singleTimeline(tenant: string, itemIds: string[], request: SeriesRequest, now: Date = this.clock()): Promise<BucketJson[]> {
    const range = this.rangeOf(request, now, undefined, true);
    const ids = distinctItemIds(itemIds);
    const options = request.queryOptions ?? {};
    checkQueryOptions(options);
    return (await this.aggregate(tenant, { kind: "single", itemIds: ids }, range, options, now)).get("")!;
  }

  /** Each item's last event before `at` (a STATE-EXPRESSION's inputs). */
  lastEvents(tenant: string, itemIds: string[], at: Date): Promise<{ itemId: string; ts: Date; value: number }[]> {
    return lastEvents(this.knex, tenant, itemIds, at);
  }

  /** The items of the list that exist in the tenant, each with its itemAction (null: none). */
  itemActions(tenant: string, itemIds: string[]): Promise<Map<string, string | null>> {
    return itemActions(this.knex, tenant, itemIds);
  }

  /**
   * `GET /items/{itemId}/events/latest` and `POST /events/latest`: each item's latest stored event,
   * or null; a derived item's is its latest bucket. An unknown item is a 404 naming it.
   */
  async latest(tenant: string, itemIds: string[]): Promise<{ itemId: string; event: EventJson | null }[]> {
    const ids = [...new Set(itemIds.map((id) => id.toLowerCase()))];
    const actions = await itemActions(this.knex, tenant, ids);
    const missing = ids.filter((id) => !actions.has(id));
    if (missing.length > 0) throw invalidRequest(`there is no Item ${missing.join(", ")} in this tenant`, "itemIds", 404);
    const stored = await latestEvents(this.knex, tenant, ids.filter((id) => actions.get(id) !== "CALCULATE"));
    const answer: { itemId: string; event: EventJson | null }[] = [];
    for (const itemId of ids) {
      if (actions.get(itemId) === "CALCULATE") {
        const bucket = await this.latestBucket(tenant, itemId);
        answer.push({ itemId, event: bucket === undefined || bucket.value === null ? null : { timestamp: bucket.timestamp, value: bucket.value } });
      } else answer.push({ itemId, event: stored.get(itemId) ?? null });
    }
    return answer;
  }

  /**
   * A derived item's latest bucket, as its calculation answers with its own defaults: the last
   * bucket of a TIMESERIES, the value (at now) of a VALUE calculation; undefined when it has none.
   */
  async latestBucket(tenant: string, itemId: string): Promise<BucketJson | undefined> {
    const answer = await this.derived(tenant, itemId, {});
    if ("value" in answer) return { timestamp: this.clock().toISOString(), value: answer.value };
    if ("buckets" in answer) return answer.buckets[answer.buckets.length - 1];
    const last = answer.events[answer.events.length - 1];
    return last === undefined ? undefined : { timestamp: last.timestamp, value: last.value };
  }

  /** `DELETE /items/{itemId}/events?from&to`: the item's events in `[from, to)`, in one statement. */
  async deleteRange(tenant: string, itemId: string, from: Date, to: Date): Promise<number> {
    const id = itemId.toLowerCase();
    const actions = await itemActions(this.knex, tenant, [id]);
    if (!actions.has(id)) throw invalidRequest(`there is no Item ${id} in this tenant`, "itemId", 404);
    if (!(from.getTime() <= to.getTime())) throw invalidRequest("from must not be later than to", "to");
    return deleteEvents(this.knex, tenant, id, from, to);
  }

  /**
   * An item's raw events in the request's range and filter, as a stream without a size limit
   * (NDJSON and CSV exports). Everything is checked before the first row is read, so a bad
   * request is an error answer, never a broken stream. Pagination does not apply; the order is
   * by timestamp, ascending unless `sorting.order` is `["timestamp-"]`.
   */
  async exportEvents(tenant: string, itemId: string, request: SeriesRequest, notes?: QueryNotes): Promise<AsyncGenerator<EventJson>> {
    const id = itemId.toLowerCase();
    const options = request.queryOptions ?? {};
    checkQueryOptions(options);
    if (options.aggregation !== undefined) throw invalidRequest("an export is of raw events: ask for aggregated buckets as JSON", "queryOptions.aggregation");
    const order = (options.sorting as { order?: unknown } | undefined)?.order ?? ["timestamp"];
    const descending = Array.isArray(order) && order.length === 1 && order[0] === "timestamp-";
    if (!descending && !(Array.isArray(order) && order.length === 1 && (order[0] === "timestamp" || order[0] === "timestamp+"))) {
      throw invalidRequest('an export is sorted by timestamp: sorting.order is ["timestamp"] or ["timestamp-"]', "queryOptions.sorting.order");
    }
    const actions = await itemActions(this.knex, tenant, [id]);
    if (!actions.has(id)) throw invalidRequest(`there is no Item ${id} in this tenant`, "itemId", 404);
    if (actions.get(id) === "CALCULATE") throw invalidRequest(`Item ${id} is derived (itemAction CALCULATE): it has buckets, not events to export`, "itemId", 422);
    const range = this.rangeOf(request, this.clock(), notes);
    const rows = streamEvents(this.knex, tenant, [id], range, options, descending);
    return (async function* () {
      for await (const row of rows) yield row.event;
    })();
  }

  /** The stored events of the items from `since` on, in timestamp order (a subscriber resuming). */
  eventsSince(tenant: string, itemIds: string[], since: Date): AsyncGenerator<{ itemId: string; event: EventJson }> {
    const range = { from: DateTime.fromJSDate(since, { zone: "UTC" }), to: DateTime.fromMillis(MAX_INSTANT_MS, { zone: "UTC" }), zone: "UTC" };
    return streamEvents(this.knex, tenant, itemIds, range, {});
  }

  /** `POST /timeline/query` (contract §8). */
  async timelineQuery(
    tenant: string,
    request: SeriesRequest & { itemIds?: string[]; queryType?: QueryType },
    notes?: QueryNotes,
  ): Promise<{ series: ({ itemId: string } & SeriesAnswer)[] } | { buckets: BucketJson[] }> {
    const options = request.queryOptions ?? {};
    checkQueryOptions(options);
    const queryType = request.queryType ?? (options.aggregation !== undefined ? "AGGREGATION" : "EVENTS");
    if (!(QUERY_TYPES as readonly string[]).includes(queryType)) throw invalidRequest(`queryType must be one of ${QUERY_TYPES.join(", ")}`, "queryType");
    const itemIds = (request.itemIds ?? []).map((id, i) => {
      if (!isUuid(id)) throw invalidRequest("must be an item uuid", `itemIds[${i}]`);
      return id.toLowerCase();
    });
    if (queryType !== "EVENTS" && options.aggregation === undefined) throw invalidRequest(`${queryType} needs queryOptions.aggregation`, "queryOptions.aggregation");

    if (queryType === "SINGLEAGGREGATION") {
      // One timeline over the events of the index set's items; the listed items narrow it down.
      const indexSet = options.indexSet;
      if (!isUuid(indexSet)) throw invalidRequest("SINGLEAGGREGATION needs queryOptions.indexSet, the id of an IndexSet", "queryOptions.indexSet");
      let members = await indexSetItems(this.knex, tenant, indexSet.toLowerCase());
      if (members === undefined) throw invalidRequest(`there is no IndexSet ${indexSet.toLowerCase()} in this tenant`, "queryOptions.indexSet");
      if (itemIds.length > 0) members = members.filter((id) => itemIds.includes(id));
      const now = this.clock();
      const range = this.rangeOf(request, now, notes, true);
      const single = await this.aggregate(tenant, { kind: "single", itemIds: members }, range, options, now, notes);
      return { buckets: single.get("")! };
    }

    if (itemIds.length === 0) throw invalidRequest("itemIds must name at least one item", "itemIds");
    const missing = await missingItems(this.knex, tenant, itemIds);
    if (missing.length > 0) throw invalidRequest(`there is no Item ${missing.join(", ")} in this tenant`, "itemIds");
    const series = await this.series(tenant, itemIds, { ...request, queryOptions: queryType === "EVENTS" ? { ...options, aggregation: undefined } : options }, undefined, notes);
    return { series: [...new Set(itemIds)].map((itemId) => ({ itemId, ...series.get(itemId)! })) };
  }
}
