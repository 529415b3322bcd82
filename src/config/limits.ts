import { availableParallelism } from "node:os";
import { EXPRESSION_LIMIT_CEILINGS } from "../calculation/expression-size.js";
import { checkedText, integer, setting, type Group } from "./setting.js";

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

export const requestSettings = {
  bodyLimitBytes: setting({
    env: "BODY_LIMIT_BYTES",
    kind: integer(1024, 1024 * 1024 * 1024, "bytes"),
    default: 10 * 1024 * 1024,
    doc: "Largest accepted request body, after decoding its `Content-Encoding`.",
    notes: "It bounds JSON bodies, and NDJSON and CSV uploads sent with a `Content-Encoding` (decoded); sent as they are, those stream without a total limit.",
  }),
  uploadLineLimitBytes: setting({
    env: "UPLOAD_LINE_LIMIT_BYTES",
    kind: integer(1024, 256 * 1024 * 1024, "bytes"),
    default: 1024 * 1024,
    doc: "Longest line of an NDJSON upload, longest row (every field of it) of a CSV upload.",
    notes: "A longer one ends the upload with a `413` naming this setting while it streams, before more of it is held.",
  }),
};

export const timeSeriesSettings = {
  defaultTimeZone: setting({
    env: "DEFAULT_TIME_ZONE",
    kind: checkedText(isTimeZone, "must be an IANA time zone such as Europe/Brussels", "IANA time zone"),
    default: "Europe/Brussels",
    doc: "Time zone of event date ranges and buckets.",
  }),
  eventsRetentionDays: setting({
    env: "EVENTS_RETENTION_DAYS",
    kind: integer(1, 3_000_000),
    absent: "events are kept forever",
    doc: "Days events are kept: each month of events wholly older is dropped, checked at start and hourly.",
    notes:
      "A query whose range ends at or before the horizon (now less these days) is a `422` naming it; " +
      "one that starts before it answers with the header `Events-Retained-From` (docs/reference/time-series.md, Retention). " +
      "Aggregations the rollups tile are answered past it.",
  }),
  rollupZones: setting({
    env: "ROLLUP_ZONES",
    kind: checkedText((v) => v.split(",").every((zone) => isTimeZone(zone.trim())), "must be IANA time zones separated by commas, such as UTC,Europe/Brussels", "IANA time zones, comma-separated"),
    default: "UTC",
    doc: "Zones whose local days and months the events' rollups hold, beside the 15-minute UTC cells that serve every zone.",
    notes:
      "Daily and coarser aggregations in these zones read a row per item and day (or month); in other zones they read the cells. " +
      "Each zone is built from the cells at its first query (docs/reference/time-series.md, Rollups).",
  }),
};

export const graphQuerySettings = {
  queryTimeoutMs: setting({
    env: "QUERY_TIMEOUT_MS",
    kind: integer(1, 3_600_000, "ms"),
    default: 5000,
    doc: "Longest a graph query statement may run (answered `422`); at most `DATABASE_STATEMENT_TIMEOUT_MS`.",
    notes: "It is the PostgreSQL `statement_timeout` of the graph queries' own pool.",
  }),
  queryMaxRows: setting({
    env: "QUERY_MAX_ROWS",
    kind: integer(1, 10_000_000),
    default: 10_000,
    doc: "Most rows a graph query may return.",
    notes: "On the embedded database a query may also visit at most 50 times as many rows of the graph.",
  }),
};

export const transformSettings = {
  transformTimeoutMs: setting({
    env: "TRANSFORM_TIMEOUT_MS",
    kind: integer(1, 3_600_000, "ms"),
    default: 2000,
    doc: "Longest a transform may run, sub-queries and awaited work included; then its process is killed.",
  }),
  transformProcesses: setting({
    env: "TRANSFORM_PROCESSES",
    kind: integer(1, 256),
    default: Math.max(2, availableParallelism()),
    defaultText: "the number of cores, at least 2",
    doc: "Child processes that evaluate transforms, one transform at a time each.",
  }),
  transformMemoryMb: setting({ env: "TRANSFORM_MEMORY_MB", kind: integer(16, 65_536, "MiB"), default: 256, doc: "Heap ceiling of one transform process." }),
  transformMaxResultBytes: setting({
    env: "TRANSFORM_MAX_RESULT_BYTES",
    kind: integer(1024, 1024 * 1024 * 1024, "bytes"),
    default: 10 * 1024 * 1024,
    doc: "Largest transform result, UTF-8 bytes of its JSON text.",
  }),
  transformMaxQueue: setting({ env: "TRANSFORM_MAX_QUEUE", kind: integer(0, 1_000_000), default: 1000, doc: "Transforms waiting for a process before new ones get `503`." }),
};

export const calculationSettings = {
  calculationTimeoutMs: setting({ env: "CALCULATION_TIMEOUT_MS", kind: integer(1, 3_600_000, "ms"), default: 10_000, doc: "Longest one calculation may run, nested ones included." }),
  calculationMaxSteps: setting({
    env: "CALCULATION_MAX_STEPS",
    kind: integer(1, 100_000),
    default: 1000,
    doc: "Most steps of one `CALCULATION` definition, on save and at run time.",
  }),
  // Above these ceilings an expression that passes the limits could overflow the stack.
  expressionMaxLength: setting({
    env: "EXPRESSION_MAX_LENGTH",
    kind: integer(1, EXPRESSION_LIMIT_CEILINGS.maxLength),
    default: 1000,
    doc: "Most characters of one calculation expression (longer could overflow mathjs's stack).",
  }),
  expressionMaxDepth: setting({
    env: "EXPRESSION_MAX_DEPTH",
    kind: integer(1, EXPRESSION_LIMIT_CEILINGS.maxDepth),
    default: 50,
    doc: "Deepest nesting of one calculation expression: parentheses, calls, unary, power and conditional operators.",
  }),
};

export const limitGroups: Group[] = [
  { title: "Requests", settings: requestSettings },
  { title: "Time series", settings: timeSeriesSettings },
  { title: "Graph queries", settings: graphQuerySettings },
  { title: "Transforms", settings: transformSettings },
  { title: "Calculations", settings: calculationSettings },
];
