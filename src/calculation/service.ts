import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import type { GraphSession } from "../db/database.js";
import { ProblemError, isUniqueViolation } from "../errors.js";
import { isUuid } from "../input.js";
import { executeQuery, type QueryLimits } from "../graph/query/execute.js";
import { bucketStarts } from "../timeseries/bucket-range.js";
import { checkInterval, nextBucketStart } from "../timeseries/buckets.js";
import { resolveEventDateRange, type EventDateRange } from "../timeseries/periods.js";
import type { QueryOptions } from "../timeseries/query.js";
import type { TimeSeries } from "../timeseries/service.js";
import { Deadline } from "./deadline.js";
import { checkCalculation, type CalculationDefinition, type CalculationDefinitionInput, type CompiledCalculation, type ItemMetric, type ScopeEntry } from "./definition.js";
import { evaluateBuckets, evaluateValue } from "./evaluate.js";
import { reduceValues } from "./reduce.js";
import type { StepLimits } from "./steps.js";

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

export interface CalculationDefinitionPage {
  calculationDefinitions: CalculationDefinition[];
  total: number;
  limit: number;
  offset: number;
}

export interface CalculationLimits {
  /** Wall-clock limit of one calculation, nested ones included (CALCULATION_TIMEOUT_MS). */
  timeoutMs: number;
  query: Omit<QueryLimits, "failureCode">;
  /** Most steps and largest expressions of a definition, on save and at run time. */
  steps: StepLimits;
  /** The clock the time limit is read on. Default `Date.now`; tests pass their own. */
  clock?: () => number;
}

interface Row {
  id: string;
  external_id: string;
  name: string | null;
  calculation_type: CalculationDefinition["calculationType"];
  active: boolean;
  data: CalculationDefinition["data"];
  created_at: Date;
  updated_at: Date;
}
const COLUMNS = ["id", "external_id", "name", "calculation_type", "active", "data", "created_at", "updated_at"];
const MAX_DEPTH = 10;

function toDefinition(row: Row): CalculationDefinition {
  return {
    id: row.id,
    name: row.name ?? "",
    externalId: row.external_id,
    calculationType: row.calculation_type,
    active: row.active,
    data: row.data,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function failed(message: string): ProblemError {
  return new ProblemError("CALCULATION_FAILED", message);
}

function notFound(externalId: string): ProblemError {
  return new ProblemError("CALCULATION_DEFINITION_NOT_FOUND", `there is no calculation definition "${externalId}" in this tenant`);
}

/** Per run: one "now", one deadline (nested calculations share it), the chain of definitions being calculated. */
interface Run {
  tenant: string;
  now: Date;
  deadline: Deadline;
  chain: string[];
}

/** Calculation Definitions: stored, checked on save, calculated on request (spec §2.2, contract §5). */
export class Calculations {
  constructor(
    private readonly knex: Knex,
    private readonly graph: GraphSession,
    private readonly timeSeries: TimeSeries,
    private readonly limits: CalculationLimits,
  ) {}

  private async all(tenant: string): Promise<Map<string, CalculationDefinition>> {
    const rows = (await this.knex("calculation_definitions").where({ tenant }).select(COLUMNS)) as Row[];
    return new Map(rows.map((r) => [r.external_id, toDefinition(r)]));
  }

  private async check(tenant: string, input: CalculationDefinitionInput): Promise<CompiledCalculation> {
    const stored = await this.all(tenant);
    const { compiled, problems } = await checkCalculation(input, (externalId) => stored.get(externalId), this.limits.steps);
    if (compiled === undefined) {
      const first = problems[0];
      throw new ProblemError("INVALID_DEFINITION", `the calculation definition has ${problems.length} problem(s); the first: ${first?.message} (${first?.path})`, { errors: problems });
    }
    return compiled;
  }

  async create(tenant: string, input: CalculationDefinitionInput): Promise<CalculationDefinition> {
    await this.check(tenant, input);
    try {
      const [row] = (await this.knex("calculation_definitions")
        .insert({ tenant, id: randomUUID(), external_id: input.externalId, name: input.name ?? null, calculation_type: input.calculationType, active: input.active ?? true, data: JSON.stringify(input.data) })
        .returning(COLUMNS)) as Row[];
      return toDefinition(row!);
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new ProblemError("INVALID_DEFINITION", `a calculation definition with externalId "${input.externalId}" already exists in this tenant`, { status: 409, cause: err });
      }
      throw err;
    }
  }

  async get(tenant: string, externalId: string): Promise<CalculationDefinition> {
    const row = (await this.knex("calculation_definitions").where({ tenant, external_id: externalId }).first(COLUMNS)) as Row | undefined;
    if (row === undefined) throw notFound(externalId);
    return toDefinition(row);
  }

  /** One page by externalId, like the other lists: `{ calculationDefinitions, total, limit, offset }`. */
  async list(tenant: string, page: { limit: number; offset: number }): Promise<CalculationDefinitionPage> {
    const base = this.knex("calculation_definitions").where({ tenant });
    const [rows, counted] = await Promise.all([
      base.clone().select(COLUMNS).orderBy("external_id").limit(page.limit).offset(page.offset) as Promise<Row[]>,
      base.clone().select(this.knex.raw("count(*)::int as total")) as Promise<{ total: number }[]>,
    ]);
    return { calculationDefinitions: rows.map(toDefinition), total: Number(counted[0]?.total ?? 0), limit: page.limit, offset: page.offset };
  }

  async replace(tenant: string, externalId: string, input: CalculationDefinitionInput): Promise<CalculationDefinition> {
    if (input.externalId !== externalId) throw new ProblemError("INVALID_REQUEST", "the body's externalId must be the one in the path");
    await this.check(tenant, input);
    const [row] = (await this.knex("calculation_definitions")
      .where({ tenant, external_id: externalId })
      .update({ name: input.name ?? null, calculation_type: input.calculationType, active: input.active ?? true, data: JSON.stringify(input.data), updated_at: this.knex.fn.now() })
      .returning(COLUMNS)) as Row[];
    if (row === undefined) throw notFound(externalId);
    return toDefinition(row);
  }

  async delete(tenant: string, externalId: string): Promise<void> {
    const deleted: number = await this.knex("calculation_definitions").where({ tenant, external_id: externalId }).del();
    if (deleted === 0) throw notFound(externalId);
  }

  /** `POST /calculation-definitions/{externalId}/calculate`. */
  async calculate(tenant: string, externalId: string, request: CalculateRequest, now = new Date()): Promise<CalculationResult> {
    return this.run({ tenant, now, deadline: Deadline.after(this.limits.timeoutMs, this.limits.clock), chain: [] }, externalId, request);
  }

  private async run(run: Run, externalId: string, request: CalculateRequest): Promise<CalculationResult> {
    if (run.chain.includes(externalId)) throw failed(`reference cycle: ${[...run.chain, externalId].join(" → ")}`);
    if (run.chain.length >= MAX_DEPTH) throw failed(`calculations nest deeper than ${MAX_DEPTH}`);
    const definition = await this.get(run.tenant, externalId);
    if (!definition.active) throw failed(`calculation definition "${externalId}" is not active`);
    const stored = await this.all(run.tenant);
    // The same limits as on save: a definition stored before they were lowered is refused, not run.
    const { compiled, problems } = await checkCalculation(definition, (id) => stored.get(id), this.limits.steps, run.deadline);
    if (compiled === undefined) throw new ProblemError("INVALID_DEFINITION", `stored calculation definition "${externalId}" is not valid: ${problems[0]?.message}`, { errors: problems });
    return this.evaluate({ ...run, chain: [...run.chain, externalId] }, compiled, request);
  }

  private async evaluate(run: Run, c: CompiledCalculation, request: CalculateRequest): Promise<CalculationResult> {
    const block = c.block;
    const eventDateRange = request.eventDateRange ?? block.eventDateRange;
    const queryOptions: QueryOptions = { ...block.queryOptions, ...request.queryOptions };
    const range = resolveEventDateRange(eventDateRange, run.now, this.timeSeries.defaultZone);
    const state = c.definition.calculationType === "STATE-EXPRESSION";
    const valueOnly = state || block.expressionType === "VALUE";

    // The bucket grid of the result.
    const interval = queryOptions.aggregation?.interval;
    const needsGrid = !state && (!valueOnly || Object.values(c.scope).some((s) => isSeries(s) && s.type !== "REDUCE"));
    if (needsGrid && interval === undefined) throw new ProblemError("INVALID_REQUEST", "this calculation needs queryOptions.aggregation.interval (the bucket size)");
    const starts = needsGrid ? bucketStarts(range.from.toMillis(), range.to.toMillis(), checkInterval(interval!), range.zone) : [];
    const aggregation = { metric: "avg" as const, ...queryOptions.aggregation };

    // The items of each selectVariable, from the select query.
    const selected = c.select === undefined ? {} : await executeQuery(this.graph, c.select, run.tenant, scalarInputs(request), { ...this.limits.query, failureCode: "CALCULATION_FAILED" });

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
        const nested = await this.run(run, entry.expression!, { eventDateRange, queryOptions: request.queryOptions });
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
        const raw = await this.timeSeries.series(run.tenant, itemIds, { eventDateRange: reduceRange, queryOptions: { filter: ts.queryOptions?.filter, pagination: { limit: 10_000 } } }, run.now);
        const values = [...raw.values()].flatMap((a) => ("events" in a ? a.events.map((e) => e.value) : []));
        constants.set(name, reduceValues(values, entry.reduce!.reduceType));
        continue;
      }
      if (state) {
        constants.set(name, await this.lastValue(run, itemIds, ts.metric, range.to.toJSDate()));
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
        const single = await this.timeSeries.singleTimeline(run.tenant, itemIds, { eventDateRange: scopeRange, queryOptions: { ...scopeOptions, aggregation: { ...scopeOptions.aggregation!, metric } } }, run.now);
        values = align(single, starts);
      } else {
        const perItem = await this.timeSeries.series(run.tenant, itemIds, { eventDateRange: scopeRange, queryOptions: scopeOptions }, run.now);
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
  private async lastValue(run: Run, itemIds: string[], metric: ItemMetric | undefined, at: Date): Promise<number | null> {
    if (itemIds.length === 0) return null;
    const rows = (await this.knex("events")
      .where({ tenant: run.tenant })
      .whereIn("item_id", itemIds)
      .andWhere("ts", "<", at)
      .distinctOn("item_id")
      .orderBy([{ column: "item_id" }, { column: "ts", order: "desc" }, { column: "source_id", order: "desc" }])
      .select("item_id", "ts", "value")) as { item_id: string; ts: Date; value: number }[];
    if (rows.length > 1 && metric === undefined) throw failed(`${rows.length} items give a last value: give timeseries.metric to combine them`);
    if (metric === "open") return rows.sort((a, b) => a.ts.getTime() - b.ts.getTime())[0]?.value ?? null;
    if (metric === "close") return rows.sort((a, b) => b.ts.getTime() - a.ts.getTime())[0]?.value ?? null;
    return combine(rows.map((r) => r.value), metric ?? "avg");
  }
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
