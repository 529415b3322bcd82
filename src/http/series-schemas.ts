import { Type, type TSchema } from "typebox";
import { CALCULATION_TYPES, ITEM_METRICS, SCOPE_TYPES, type CalculationData, type CalculationType } from "../calculation/definition.js";
import { REDUCE_TYPES } from "../calculation/reduce.js";
import { MAX_OFFSET, UUID_PATTERN } from "../input.js";
import { INTERVALS } from "../timeseries/buckets.js";
import { ALGORITHMS } from "../timeseries/interpolation.js";
import { PERIODS, type EventDateRange } from "../timeseries/periods.js";
import { MAX_LIMIT, METRICS, type QueryOptions } from "../timeseries/query.js";
import { QUERY_TYPES, type QueryType } from "../timeseries/service.js";

/**
 * The series request fields (spec §2.3 and §2.4) and a calculation definition's data (§2.2), typed
 * to the field for the OpenAPI description, their enums taken from the very lists the services
 * check against. Each is marked `x-checkedBy: service`: the request validator reads it as the plain
 * object or text it always accepted (validation.ts), and the service checks it field by field,
 * naming every problem with its own message and path (docs/reference/errors.md). So the
 * description is exact while the answers to bad input stay those the contract documents.
 */
export const CHECKED_BY = "x-checkedBy";
const checked = { [CHECKED_BY]: "service" };

const enumOf = (values: readonly string[], description?: string) =>
  Type.Unsafe<string>({ type: "string", enum: [...values], ...(description !== undefined ? { description } : {}) });
const Texts = (description?: string) => Type.Array(Type.String({ minLength: 1 }), { minItems: 1, ...(description !== undefined ? { description } : {}) });
const Operator = enumOf(["or", "and", "not"], "how the values combine: any of them (or, the default), all of them (and), none of them (not)");
const Instant = Type.String({ description: "ISO-8601 date-time" });

const DateRange = Type.Object(
  {
    type: Type.Optional(enumOf(["timestamp"], "the date field; only timestamp")),
    period: Type.Optional(enumOf(PERIODS, "default This week")),
    from: Type.Optional(Type.String({ description: "Custom range only: an ISO-8601 date-time, {{now}} or {{today}}" })),
    to: Type.Optional(Type.String({ description: "Custom range only: an ISO-8601 date-time, {{now}} or {{today}}" })),
    timeZone: Type.Optional(Type.String({ description: "IANA zone, e.g. Europe/Brussels; default DEFAULT_TIME_ZONE" })),
  },
  { description: "spec §2.3: the half-open range [from, to) the events are read in", ...checked },
);

const KeyFilter = Type.Object({ key: Type.String({ minLength: 1 }), operator: Type.Optional(Operator), values: Texts() }, { additionalProperties: false });
const Bound = {
  from: Type.Optional(Type.Number()),
  fromInclusive: Type.Optional(Type.Boolean()),
  to: Type.Optional(Type.Number()),
  toInclusive: Type.Optional(Type.Boolean()),
  invert: Type.Optional(Type.Boolean()),
};
const Filter = Type.Object(
  {
    tenantCodes: Type.Optional(Type.Array(KeyFilter)),
    keyValues: Type.Optional(Type.Array(KeyFilter)),
    entityReferences: Type.Optional(
      Type.Array(Type.Object({ type: Type.String({ minLength: 1 }), ids: Texts(), roles: Type.Optional(Texts()), operator: Type.Optional(Operator) }, { additionalProperties: false })),
    ),
    numberValues: Type.Optional(Type.Array(Type.Object(Bound, { additionalProperties: false, description: "from, to or both" }))),
    metaDates: Type.Optional(
      Type.Array(
        Type.Object({ ...Bound, type: enumOf(["entry", "exit", "from", "to"]), from: Type.Optional(Instant), to: Type.Optional(Instant) }, { additionalProperties: false, description: "from, to or both" }),
      ),
    ),
    tags: Type.Optional(Type.Object({ operator: Type.Optional(Operator), values: Texts() }, { additionalProperties: false })),
    sourceIds: Type.Optional(Texts()),
    itemIds: Type.Optional(Type.Array(Type.String({ pattern: UUID_PATTERN }), { minItems: 1 })),
  },
  { additionalProperties: false, description: "spec §2.4 filter: every member and entry must hold" },
);

const GapStrategy = Type.Union(
  [
    Type.Object({ type: enumOf(["push", "pull"]), config: Type.Optional(Type.Object({})) }),
    Type.Object({ type: enumOf(["meet"]), config: Type.Object({ meet: Type.Number({ minimum: 0, maximum: 1, description: "fraction of the way from L to R" }) }) }),
    Type.Object({ type: enumOf(["interpolate"]), config: Type.Object({ algorithm: enumOf(ALGORITHMS) }) }),
  ],
  { description: "how empty buckets are filled (SEMANTICS.md)" },
);

const Options = Type.Object(
  {
    pagination: Type.Optional(
      Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, description: "default 1000" })), offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET })) }),
    ),
    sorting: Type.Optional(
      Type.Object({ order: Type.Optional(Type.Array(enumOf(["timestamp", "timestamp-", "timestamp+", "value", "value-", "value+", "sourceId", "sourceId-", "sourceId+"]))) }),
    ),
    aggregation: Type.Optional(Type.Object({ metric: Type.Optional(enumOf(METRICS, "default avg")), interval: enumOf(INTERVALS), gapStrategy: Type.Optional(GapStrategy) })),
    indexSet: Type.Optional(Type.String({ description: "the id of an IndexSet" })),
    filter: Type.Optional(Filter),
  },
  { description: "spec §2.4", ...checked },
);

/** A series request's `eventDateRange`. */
export const DateRangeBody = Type.Unsafe<EventDateRange>(DateRange);
/** A series request's `queryOptions`. */
export const QueryOptionsBody = Type.Unsafe<QueryOptions>(Options);
/** `queryType` of a timeline query. */
export const QueryTypeBody = Type.Unsafe<QueryType>(enumOf(QUERY_TYPES, "default EVENTS, or AGGREGATION when queryOptions.aggregation is given"));

const Timeseries = Type.Object({
  selectVariable: Type.Optional(Type.String({ description: "{{?label}}: the items the select query binds to that label" })),
  items: Type.Optional(Type.Array(Type.Object({ id: Type.String({ pattern: UUID_PATTERN }), indexSetId: Type.Optional(Type.String()) }))),
  lag: Type.Optional(Type.Integer({ minimum: 0 })),
  bucketIndex: Type.Optional(Type.Integer({ description: "negative counts from the end" })),
  metric: Type.Optional(enumOf(ITEM_METRICS)),
  queryType: Type.Optional(enumOf(QUERY_TYPES)),
  eventDateRange: Type.Optional(DateRange),
  queryOptions: Type.Optional(Options),
});
const ScopeEntry = Type.Object({
  type: Type.Optional(enumOf(SCOPE_TYPES, "default TIMESERIES")),
  timeseries: Type.Optional(Timeseries),
  value: Type.Optional(Type.Number()),
  reduce: Type.Optional(Type.Object({ reduceType: enumOf(REDUCE_TYPES), eventDateRange: Type.Optional(DateRange) })),
  expression: Type.Optional(Type.String({ description: "type EXPRESSION: the externalId of the definition whose result is this input" })),
});
const Data = Type.Object(
  {
    inputDefinitions: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1 }), type: Type.Optional(enumOf(["ITEM", "VALUE"])), label: Type.Optional(Type.String()) }))),
    calculation: Type.Optional(
      Type.Object({
        select: Type.Optional(Type.String({ description: "a graph query binding the items" })),
        expression: Type.Optional(Type.String()),
        steps: Type.Optional(Type.Array(Type.Object({ name: Type.String({ pattern: "^[A-Za-z][A-Za-z0-9_]*$" }), expression: Type.String() }))),
        output: Type.Optional(Type.String()),
        expressionType: Type.Optional(enumOf(["VALUE", "TIMESERIES"])),
        eventDateRange: Type.Optional(DateRange),
        queryOptions: Type.Optional(Options),
        removeBuckets: Type.Optional(Type.Array(Type.Integer())),
        scope: Type.Optional(Type.Record(Type.String(), ScopeEntry)),
      }),
    ),
  },
  { description: "spec §2.2 data block; docs/reference/calculations.md", ...checked },
);

/** A calculation definition's `data`. */
export const CalculationDataBody = Type.Unsafe<CalculationData>(Data);
/** A calculation definition's `calculationType`. */
export const CalculationTypeBody = Type.Unsafe<CalculationType>({ ...enumOf(CALCULATION_TYPES), ...checked });

/**
 * The schema the request validator compiles: every part marked {@link CHECKED_BY} is left to its
 * service, read here as a plain value of its JSON type (an object, text), as it always was.
 */
export function validatedPart(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(validatedPart);
  if (schema === null || typeof schema !== "object") return schema;
  const node = schema as Record<string, unknown>;
  if (node[CHECKED_BY] !== undefined) return { type: node.type };
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, validatedPart(value)]));
}

export type { TSchema };
