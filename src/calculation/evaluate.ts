import type { GraphSession } from "../db/database.js";
import { ProblemError } from "../errors.js";
import { executeQuery, type QueryLimits } from "../graph/query/execute.js";
import { isUuid } from "../input.js";
import { bucketStarts } from "../timeseries/bucket-range.js";
import { checkInterval, nextBucketStart } from "../timeseries/buckets.js";
import { resolveEventDateRange, type EventDateRange } from "../timeseries/periods.js";
import type { QueryOptions } from "../timeseries/query.js";
import type { TimeSeries } from "../timeseries/service.js";
import type { Deadline } from "./deadline.js";
import type { CompiledCalculation, ItemMetric, ScopeEntry } from "./definition.js";
import { reduceValues } from "./reduce.js";
import type { Step } from "./steps.js";

/** A caller-chosen input: the items of a series scope, or the number of a VALUE scope. */
export interface CalculationInput {
  items?: { id: string }[];
  value?: number;
}

export interface CalculateRequest {
  /** Caller-chosen inputs by scope name. */
  inputs?: Record<string, CalculationInput>;
  eventDateRange?: EventDateRange;
  queryOptions?: QueryOptions;
}

export type CalculationResult = { buckets: { timestamp: string; value: number | null }[] } | { value: number | null };

/** What a calculation reads besides its definition: the graph, the time series, and the calculations it nests. */
export interface CalculationEnvironment {
  graph: GraphSession;
  timeSeries: TimeSeries;
  query: Omit<QueryLimits, "failureCode">;
  /** Calculates the definition an EXPRESSION scope names, within the same run. */
  nested(externalId: string, request: CalculateRequest): Promise<CalculationResult>;
}

/** One run: one "now" and one deadline, which nested calculations share. */
export interface RunContext {
  tenant: string;
  now: Date;
  deadline: Deadline;
}

export function failed(message: string): ProblemError {
  return new ProblemError("CALCULATION_FAILED", message);
}


/** What the steps of one calculation read besides each other. */
export interface EvaluationInputs {
  /** Bucket starts (epoch milliseconds); empty when the calculation has no bucket grid. */
  starts: readonly number[];
  /** Where the bucket after the last one starts: the last bucket's end. */
  end: number;
  from: number;
  to: number;
  now: number;
  /** The same value in every bucket (VALUE scopes, reductions, last values). */
  constants: ReadonlyMap<string, number | null>;
  /** One value per bucket. */
  series: ReadonlyMap<string, readonly (number | null)[]>;
}

const asNumber = (value: number | null | undefined): number => value ?? Number.NaN;
const asValue = (value: number | undefined): number | null => (value === undefined || Number.isNaN(value) ? null : value);

/**
 * Evaluates the steps once per bucket, in their order, each bucket seeing the results of those
 * before it (`previousValue` …). One scope serves every step of every bucket: a value is set once
 * where it changes, never copied, so the work is buckets × steps, no more. The deadline is
 * counted per step evaluated; past it the run stops with `422 CALCULATION_FAILED`.
 */
export async function evaluateBuckets(steps: readonly Step[], output: string, inputs: EvaluationInputs, deadline: Deadline): Promise<(number | null)[]> {
  const scope = initialScope(inputs);
  const results: (number | null)[] = new Array(inputs.starts.length);
  for (let i = 0; i < inputs.starts.length; i++) {
    results[i] = evaluateAt(scope, i, steps, output, inputs, results);
    if (deadline.tick(steps.length)) await deadline.yield();
  }
  return results;
}

/** Evaluates the steps once (a VALUE expression), at the first bucket when there is a grid. */
export function evaluateValue(steps: readonly Step[], output: string, inputs: EvaluationInputs, deadline: Deadline): number | null {
  const value = evaluateAt(initialScope(inputs), 0, steps, output, inputs, []);
  deadline.tick(steps.length);
  return value;
}

/** The names that keep their value through the run: the range, `now`, the constants. */
function initialScope(inputs: EvaluationInputs): Map<string, number> {
  const scope = new Map<string, number>([
    ["from", inputs.from],
    ["to", inputs.to],
    ["now", inputs.now],
  ]);
  for (const [name, value] of inputs.constants) scope.set(name, asNumber(value));
  return scope;
}

function evaluateAt(scope: Map<string, number>, index: number, steps: readonly Step[], output: string, inputs: EvaluationInputs, results: readonly (number | null)[]): number | null {
  const start = inputs.starts[index];
  const time = start ?? inputs.from;
  scope.set("time", time);
  scope.set("interval", start === undefined ? inputs.to - inputs.from : (inputs.starts[index + 1] ?? inputs.end) - start);
  scope.set("index", index);
  scope.set("previousValue", index >= 1 ? asNumber(results[index - 1]) : Number.NaN);
  scope.set("previousPreviousValue", index >= 2 ? asNumber(results[index - 2]) : Number.NaN);
  scope.set("firstValue", index >= 1 ? asNumber(results[0]) : Number.NaN);
  for (const [name, column] of inputs.series) scope.set(name, asNumber(column[index]));
  for (const step of steps) scope.set(step.name, asNumber(step.expression.evaluateIn(scope)));
  return asValue(scope.get(output));
}

/**
 * Calculates a compiled definition: reads its inputs — the select query's items, their series,
 * reductions, last values, nested calculations — onto one bucket grid, then evaluates the steps.
 */
export async function evaluateCalculation(env: CalculationEnvironment, run: RunContext, c: CompiledCalculation, request: CalculateRequest): Promise<CalculationResult> {
  const block = c.block;
  const eventDateRange = request.eventDateRange ?? block.eventDateRange;
  const queryOptions: QueryOptions = { ...block.queryOptions, ...request.queryOptions };
  const range = resolveEventDateRange(eventDateRange, run.now, env.timeSeries.defaultZone);
  const state = c.definition.calculationType === "STATE-EXPRESSION";
  const valueOnly = state || block.expressionType === "VALUE";

  // The bucket grid of the result.
  const interval = queryOptions.aggregation?.interval;
  const needsGrid = !state && (!valueOnly || Object.values(c.scope).some((s) => isSeries(s) && s.type !== "REDUCE"));
  if (needsGrid && interval === undefined) throw new ProblemError("INVALID_REQUEST", "this calculation needs queryOptions.aggregation.interval (the bucket size)");
  const starts = needsGrid ? bucketStarts(range.from.toMillis(), range.to.toMillis(), checkInterval(interval!), range.zone) : [];
  const aggregation = { metric: "avg" as const, ...queryOptions.aggregation };

  // The items of each selectVariable, from the select query.
  const selected = c.select === undefined ? {} : await executeQuery(env.graph, c.select, run.tenant, scalarInputs(request), { ...env.query, failureCode: "CALCULATION_FAILED" });

  const series = new Map<string, (number | null)[]>();
  const constants = new Map<string, number | null>();
  for (const [name, entry] of Object.entries(c.scope)) {
    run.deadline.check();
    const given = request.inputs ?? {};
    const input = Object.hasOwn(given, name) ? given[name] : undefined;
    if (entry.type === "VALUE") {
      constants.set(name, typeof input?.value === "number" ? input.value : (entry.value ?? null));
      continue;
    }
    if (entry.type === "EXPRESSION") {
      const nested = await env.nested(entry.expression!, { eventDateRange, queryOptions: request.queryOptions });
      if ("value" in nested) constants.set(name, nested.value);
      else {
        const byTime = new Map(nested.buckets.map((b) => [Date.parse(b.timestamp), b.value]));
        if (valueOnly) constants.set(name, pickBucket(nested.buckets.map((b) => b.value), entry.timeseries?.bucketIndex));
        else series.set(name, starts.map((t) => byTime.get(t) ?? null));
      }
      continue;
    }
    const itemIds = itemsOf(name, entry, input, selected);
    const ts = entry.timeseries ?? {};
    if (entry.type === "REDUCE") {
      const reduceRange = entry.reduce?.eventDateRange ?? ts.eventDateRange ?? eventDateRange;
      const raw = await env.timeSeries.series(run.tenant, itemIds, { eventDateRange: reduceRange, queryOptions: { filter: ts.queryOptions?.filter, pagination: { limit: 10_000 } } }, run.now);
      const values = [...raw.values()].flatMap((a) => ("events" in a ? a.events.map((e) => e.value) : []));
      constants.set(name, reduceValues(values, entry.reduce!.reduceType));
      continue;
    }
    if (state) {
      constants.set(name, await lastValue(env, run, itemIds, ts.metric, range.to.toJSDate()));
      continue;
    }
    // Scope options override the calculation's; the bucket size is always the calculation's.
    // queryType EVENTS places the raw events in the buckets: the latest one of a bucket is its value.
    const scopeOptions: QueryOptions = {
      ...queryOptions,
      ...ts.queryOptions,
      aggregation: { ...aggregation, ...ts.queryOptions?.aggregation, ...(ts.queryType === "EVENTS" ? { metric: "close" as const } : {}), interval: aggregation.interval },
    };
    const scopeRange = ts.eventDateRange ?? eventDateRange;
    let values: (number | null)[];
    if (ts.queryType === "SINGLEAGGREGATION" || ts.metric === "open" || ts.metric === "close") {
      // One timeline over all the items: open/close are the earliest/latest event among them.
      const metric = ts.metric === "open" || ts.metric === "close" ? ts.metric : scopeOptions.aggregation!.metric;
      const single = await env.timeSeries.singleTimeline(run.tenant, itemIds, { eventDateRange: scopeRange, queryOptions: { ...scopeOptions, aggregation: { ...scopeOptions.aggregation!, metric } } }, run.now);
      values = align(single, starts);
    } else {
      const perItem = await env.timeSeries.series(run.tenant, itemIds, { eventDateRange: scopeRange, queryOptions: scopeOptions }, run.now);
      const columns = itemIds.map((id) => align(((perItem.get(id.toLowerCase()) ?? { buckets: [] }) as { buckets: { timestamp: string; value: number | null }[] }).buckets, starts));
      if (columns.length > 1 && ts.metric === undefined) throw failed(`scope ${name} finds ${columns.length} items: give timeseries.metric to combine them`);
      values = starts.map((_, i) => combine(columns.map((col) => col[i] ?? null), ts.metric ?? "avg"));
      // Items × buckets of work: counted against the deadline.
      if (run.deadline.tick(columns.length * starts.length)) await run.deadline.yield();
    }
    if (entry.type === "firstValue") values = values.map(() => values[0] ?? null);
    if (entry.type === "lastValue") values = values.map(() => values[values.length - 1] ?? null);
    const lag = ts.lag ?? 0;
    if (lag > 0) values = values.map((_, i) => (i - lag >= 0 ? values[i - lag]! : null));
    if (valueOnly) constants.set(name, pickBucket(values, ts.bucketIndex));
    else series.set(name, values);
  }

  const inputs = {
    starts,
    end: starts.length === 0 ? range.to.toMillis() : nextBucketStart(starts[starts.length - 1]!, checkInterval(interval!), range.zone),
    from: range.from.toMillis(),
    to: range.to.toMillis(),
    now: run.now.getTime(),
    constants,
    series,
  };
  if (valueOnly) return { value: evaluateValue(c.steps, c.output, inputs, run.deadline) };
  const results = await evaluateBuckets(c.steps, c.output, inputs, run.deadline);
  const remove = new Set((block.removeBuckets ?? []).map((i) => (i < 0 ? starts.length + i : i)));
  return { buckets: starts.map((t, i) => ({ timestamp: new Date(t).toISOString(), value: results[i]! })).filter((_, i) => !remove.has(i)) };
}

/** STATE-EXPRESSION: the last event value at or before `at`, per item, combined by the metric. */
async function lastValue(env: CalculationEnvironment, run: RunContext, itemIds: string[], metric: ItemMetric | undefined, at: Date): Promise<number | null> {
  const rows = await env.timeSeries.lastEvents(run.tenant, itemIds, at);
  if (rows.length > 1 && metric === undefined) throw failed(`${rows.length} items give a last value: give timeseries.metric to combine them`);
  if (metric === "open") return rows.sort((a, b) => a.ts.getTime() - b.ts.getTime())[0]?.value ?? null;
  if (metric === "close") return rows.sort((a, b) => b.ts.getTime() - a.ts.getTime())[0]?.value ?? null;
  return combine(rows.map((r) => r.value), metric ?? "avg");
}

function isSeries(entry: ScopeEntry & { type: string }): boolean {
  return !["VALUE", "EXPRESSION"].includes(entry.type);
}

function scalarInputs(request: CalculateRequest): Record<string, unknown> {
  return Object.fromEntries(Object.entries(request.inputs ?? {}).filter(([, v]) => typeof v?.value === "number").map(([k, v]) => [k, v.value]));
}

function itemsOf(name: string, entry: ScopeEntry, input: CalculationInput | undefined, selected: Record<string, unknown[]>): string[] {
  if (input?.items !== undefined) {
    return input.items.map((item, i) => {
      if (!isUuid(item?.id)) throw new ProblemError("INVALID_REQUEST", `inputs.${name}.items[${i}].id must be the uuid of an Item`, { errors: [{ path: `inputs.${name}.items[${i}].id`, message: "must be the uuid of an Item" }] });
      return item.id.toLowerCase();
    });
  }
  const ts = entry.timeseries ?? {};
  if (ts.items !== undefined) return ts.items.map((i) => i.id.toLowerCase());
  const label = /\?([A-Za-z_][A-Za-z0-9_]*)/.exec(ts.selectVariable ?? "")?.[1];
  if (label === undefined) throw new ProblemError("INVALID_REQUEST", `scope ${name} needs items: give inputs.${name}.items`);
  return (selected[label] ?? []).map((e) => String((e as { id: unknown }).id));
}

function align(buckets: { timestamp: string; value: number | null }[], starts: number[]): (number | null)[] {
  const byTime = new Map(buckets.map((b) => [Date.parse(b.timestamp), b.value]));
  return starts.map((t) => byTime.get(t) ?? null);
}

/** Several items' values in one bucket (shared/SEMANTICS.md): over the values that are not null. */
function combine(values: (number | null)[], metric: ItemMetric): number | null {
  const present = values.filter((v): v is number => v !== null);
  if (metric === "count") return present.length;
  if (present.length === 0) return null;
  switch (metric) {
    case "multiply":
      return present.reduce((a, b) => a * b, 1);
    case "open":
      return present[0]!;
    case "close":
      return present[present.length - 1]!;
    case "sum":
    case "min":
    case "max":
      return reduceValues(present, metric);
    default:
      return reduceValues(present, "avg");
  }
}

function pickBucket(values: (number | null)[], bucketIndex: number | undefined): number | null {
  const index = bucketIndex ?? -1;
  return values[index < 0 ? values.length + index : index] ?? null;
}
