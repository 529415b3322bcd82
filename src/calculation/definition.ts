import type { ProblemDetail } from "../errors.js";
import { isUuid } from "../input.js";
import { QuerySyntaxError } from "../graph/query/errors.js";
import { compileQuery, type CompiledQuery } from "../graph/query/compiler.js";
import { parseQuery } from "../graph/query/parser.js";
import type { EventDateRange } from "../timeseries/periods.js";
import type { QueryOptions } from "../timeseries/query.js";
import { seriesRequestProblems } from "../timeseries/service.js";
import { Deadline } from "./deadline.js";
import { INTERNAL_VARIABLES } from "./expression.js";
import { REDUCE_TYPES, type ReduceType } from "./reduce.js";
import { checkSteps, type Step, type StepLimits } from "./steps.js";

export const CALCULATION_TYPES = ["EXPRESSION", "STATE-EXPRESSION", "CALCULATION"] as const;
export type CalculationType = (typeof CALCULATION_TYPES)[number];
/** Scope types: the four of the spec, and the series-input alternatives it lists beside them. */
export const SCOPE_TYPES = ["TIMESERIES", "VALUE", "REDUCE", "EXPRESSION", "id", "firstValue", "lastValue", "aggregation"] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];
export const ITEM_METRICS = ["avg", "count", "min", "max", "sum", "multiply", "open", "close"] as const;
export type ItemMetric = (typeof ITEM_METRICS)[number];

export interface TimeseriesSpec {
  /** `{{?label}}`: the items the calculation's select query binds to that label. */
  selectVariable?: string;
  items?: { id: string; indexSetId?: string }[];
  lag?: number;
  bucketIndex?: number;
  metric?: ItemMetric;
  queryType?: "EVENTS" | "AGGREGATION" | "SINGLEAGGREGATION";
  eventDateRange?: EventDateRange;
  queryOptions?: QueryOptions;
}

export interface ScopeEntry {
  type?: ScopeType;
  timeseries?: TimeseriesSpec;
  value?: number;
  reduce?: { reduceType: ReduceType; eventDateRange?: EventDateRange };
  /** type EXPRESSION: the externalId of the definition whose result is this input. */
  expression?: string;
}

export interface CalculationBlock {
  select?: string;
  expression?: string;
  /** CALCULATION: named steps, each over the scope and earlier steps; `output` names the result. */
  steps?: { name: string; expression: string }[];
  output?: string;
  expressionType?: "VALUE" | "TIMESERIES";
  eventDateRange?: EventDateRange;
  queryOptions?: QueryOptions;
  removeBuckets?: number[];
  scope?: Record<string, ScopeEntry>;
}

export interface CalculationData {
  inputDefinitions?: { name: string; type?: "ITEM" | "VALUE"; label?: string }[];
  calculation?: CalculationBlock;
}

export interface CalculationDefinitionInput {
  name?: string;
  externalId: string;
  calculationType: CalculationType;
  active?: boolean;
  data: CalculationData;
}

export interface CalculationDefinition extends CalculationDefinitionInput {
  id: string;
  name: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A definition checked and compiled. */
export interface CompiledCalculation {
  definition: CalculationDefinitionInput;
  block: CalculationBlock;
  scope: Record<string, ScopeEntry & { type: ScopeType }>;
  select: CompiledQuery | undefined;
  /** The expression, or the steps in an order where each comes after what it reads. */
  steps: Step[];
  output: string;
}

const SCOPE_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const SELECT_VARIABLE = /^\{\{\s*\?([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

/**
 * Checks a calculation definition and compiles it; every problem is listed with its path.
 * `references(externalId)` gives the definitions an EXPRESSION scope may name (undefined: none
 * such), so that references can be checked and cycles found. `limits` bound the steps and their
 * expressions; `pace` lets compiling yield to the event loop (and, at run time, stop at the
 * calculation's deadline).
 */
export async function checkCalculation(
  input: CalculationDefinitionInput,
  references: (externalId: string) => CalculationDefinitionInput | undefined,
  limits: StepLimits,
  pace: Deadline = Deadline.unlimited(),
): Promise<{ compiled?: CompiledCalculation; problems: ProblemDetail[] }> {
  const problems: ProblemDetail[] = [];
  const problem = (path: string, message: string, extra: Partial<ProblemDetail> = {}) => problems.push({ path, message, ...extra });
  if (!(CALCULATION_TYPES as readonly string[]).includes(input.calculationType)) {
    problem("calculationType", `calculationType must be one of ${CALCULATION_TYPES.join(", ")}`);
  }
  const block = input.data?.calculation;
  if (block === undefined || block === null || typeof block !== "object" || Array.isArray(block)) {
    problem("data.calculation", "data.calculation is required, an object");
    return { problems };
  }
  // The shapes everything below reads; a wrong one is named here and nothing else is checked.
  const shapes = shapeProblems(input.data, block);
  if (shapes.length > 0) return { problems: shapes };
  const scopeIn = block.scope ?? {};
  const scope: Record<string, ScopeEntry & { type: ScopeType }> = {};
  let select: CompiledQuery | undefined;
  if (block.select !== undefined) {
    try {
      select = compileQuery(parseQuery(block.select));
    } catch (err) {
      if (!(err instanceof QuerySyntaxError)) throw err;
      for (const e of err.errors ?? []) problems.push({ ...e, path: "data.calculation.select" });
    }
  }
  const inputs = new Map((input.data.inputDefinitions ?? []).map((d) => [d.name, d]));
  for (const [name, definition] of inputs) {
    if (!Object.hasOwn(scopeIn, name)) problem("data.inputDefinitions", `input "${name}" is not a scope name`);
    if (definition.type !== undefined && definition.type !== "ITEM" && definition.type !== "VALUE") problem("data.inputDefinitions", `input "${name}": type must be ITEM or VALUE`);
  }

  for (const [name, entry] of Object.entries(scopeIn)) {
    const path = `data.calculation.scope.${name}`;
    if (!SCOPE_NAME.test(name)) problem(path, `scope name "${name}" must start with a letter (then letters, digits, _)`);
    if ((INTERNAL_VARIABLES as readonly string[]).includes(name)) problem(path, `scope name "${name}" is an internal variable`);
    const type = entry?.type ?? "TIMESERIES";
    if (!(SCOPE_TYPES as readonly string[]).includes(type)) {
      problem(`${path}.type`, `type must be one of ${SCOPE_TYPES.join(", ")}`);
      continue;
    }
    scope[name] = { ...entry, type };
    const chosen = inputs.has(name);
    if (type === "VALUE") {
      if (!chosen && (typeof entry.value !== "number" || !Number.isFinite(entry.value))) problem(`${path}.value`, "a VALUE scope needs a number (or an input of that name)");
      continue;
    }
    if (type === "EXPRESSION") {
      if (typeof entry.expression !== "string" || entry.expression === "") problem(`${path}.expression`, "an EXPRESSION scope names another definition's externalId");
      else if (entry.expression !== input.externalId && references(entry.expression) === undefined) {
        problem(`${path}.expression`, `there is no calculation definition "${entry.expression}" in this tenant`);
      }
      continue;
    }
    if (type === "REDUCE" && !(REDUCE_TYPES as readonly string[]).includes(entry.reduce?.reduceType as string)) {
      problem(`${path}.reduce.reduceType`, `reduceType must be one of ${REDUCE_TYPES.join(", ")}`);
    }
    const ts = entry.timeseries ?? {};
    if (ts.selectVariable !== undefined) {
      const label = SELECT_VARIABLE.exec(ts.selectVariable)?.[1];
      if (label === undefined) problem(`${path}.timeseries.selectVariable`, "selectVariable has the form {{?label}}");
      else if (block.select === undefined) problem(`${path}.timeseries.selectVariable`, `{{?${label}}} needs data.calculation.select`);
      else if (select !== undefined && !select.labels.some((l) => l.name === label && l.kind === "entity")) {
        problem(`${path}.timeseries.selectVariable`, `the select query does not bind ?${label}`);
      }
    } else if (ts.items === undefined && !chosen) {
      problem(`${path}.timeseries`, "a series input needs timeseries.selectVariable, timeseries.items or an input of that name");
    }
    if (ts.metric !== undefined && !(ITEM_METRICS as readonly string[]).includes(ts.metric)) problem(`${path}.timeseries.metric`, `metric must be one of ${ITEM_METRICS.join(", ")}`);
    if (ts.lag !== undefined && !(Number.isInteger(ts.lag) && ts.lag >= 0)) problem(`${path}.timeseries.lag`, "lag is a whole number from 0");
    if (ts.bucketIndex !== undefined && !Number.isInteger(ts.bucketIndex)) problem(`${path}.timeseries.bucketIndex`, "bucketIndex is a whole number (negative counts from the end)");
    if (ts.queryType !== undefined && !["EVENTS", "AGGREGATION", "SINGLEAGGREGATION"].includes(ts.queryType)) problem(`${path}.timeseries.queryType`, "queryType must be EVENTS, AGGREGATION or SINGLEAGGREGATION");
    // A scope's aggregation takes its interval from the calculation: checked with one in place.
    const scopeOptions = ts.queryOptions?.aggregation === undefined ? ts.queryOptions : { ...ts.queryOptions, aggregation: { interval: "Hourly" as const, ...ts.queryOptions.aggregation } };
    for (const p of seriesRequestProblems({ eventDateRange: ts.eventDateRange, queryOptions: scopeOptions })) problems.push({ ...p, path: `${path}.timeseries.${p.path ?? ""}` });
    if (entry.reduce?.eventDateRange !== undefined) {
      for (const p of seriesRequestProblems({ eventDateRange: entry.reduce.eventDateRange })) problems.push({ ...p, path: `${path}.reduce.${p.path ?? ""}` });
    }
  }

  for (const p of seriesRequestProblems({ eventDateRange: block.eventDateRange, queryOptions: block.queryOptions })) problems.push({ ...p, path: `data.calculation.${p.path ?? ""}` });
  if (block.expressionType !== undefined && block.expressionType !== "VALUE" && block.expressionType !== "TIMESERIES") problem("data.calculation.expressionType", "expressionType must be VALUE or TIMESERIES");
  if (block.removeBuckets !== undefined && !(Array.isArray(block.removeBuckets) && block.removeBuckets.every((i) => Number.isInteger(i)))) {
    problem("data.calculation.removeBuckets", "removeBuckets is an array of whole numbers");
  }

  // The expression, or the steps of a calculation model.
  const checked = await checkSteps(input.calculationType === "CALCULATION", block, Object.keys(scopeIn), limits, pace, problem);

  // A definition may not reach itself through EXPRESSION scopes.
  const cycle = findCycle(input, references);
  if (cycle !== undefined) problem("data.calculation.scope", `reference cycle: ${cycle.join(" → ")}`);

  if (problems.length > 0 || checked === undefined) return { problems };
  return { compiled: { definition: input, block, scope, select, steps: checked.steps, output: checked.output }, problems };
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** The types of the members the checks read: lists are arrays, blocks are objects, names and ids are text. */
function shapeProblems(data: CalculationData, block: CalculationBlock): ProblemDetail[] {
  const problems: ProblemDetail[] = [];
  const inputs: unknown = data.inputDefinitions;
  if (inputs !== undefined) {
    if (!Array.isArray(inputs)) problems.push({ path: "data.inputDefinitions", message: "inputDefinitions must be an array of { name, type? }" });
    else
      inputs.forEach((d: unknown, i) => {
        if (!isObject(d) || typeof d.name !== "string") problems.push({ path: `data.inputDefinitions[${i}]`, message: "an input definition is { name, type? }, its name text" });
      });
  }
  if (block.select !== undefined && typeof block.select !== "string") problems.push({ path: "data.calculation.select", message: "select must be the text of a graph query" });
  const scope: unknown = block.scope;
  if (scope === undefined) return problems;
  if (!isObject(scope)) {
    problems.push({ path: "data.calculation.scope", message: "scope must be an object of named inputs" });
    return problems;
  }
  for (const [name, entry] of Object.entries(scope)) {
    const path = `data.calculation.scope.${name}`;
    if (!isObject(entry)) {
      problems.push({ path, message: "a scope entry must be an object" });
      continue;
    }
    for (const member of ["timeseries", "reduce"] as const) {
      if (entry[member] !== undefined && !isObject(entry[member])) problems.push({ path: `${path}.${member}`, message: `${member} must be an object` });
    }
    const items: unknown = isObject(entry.timeseries) ? entry.timeseries.items : undefined;
    if (items === undefined) continue;
    if (!Array.isArray(items)) problems.push({ path: `${path}.timeseries.items`, message: "items must be an array of { id }" });
    else
      items.forEach((item: unknown, i) => {
        if (!isObject(item) || !isUuid(item.id)) problems.push({ path: `${path}.timeseries.items[${i}].id`, message: "must be the uuid of an Item" });
      });
  }
  return problems;
}

/** The externalIds a definition's EXPRESSION scopes name. */
export function expressionUses(d: CalculationDefinitionInput): string[] {
  return Object.values(d.data?.calculation?.scope ?? {})
    .filter((s) => s?.type === "EXPRESSION" && typeof s.expression === "string")
    .map((s) => s.expression!);
}

/**
 * The path by which `start` reaches itself through EXPRESSION scopes, if it does. A definition
 * already walked is not walked again, so the walk is linear in the definitions and their
 * references (a walk of every path would double with every level of a diamond of references).
 */
function findCycle(start: CalculationDefinitionInput, references: (externalId: string) => CalculationDefinitionInput | undefined): string[] | undefined {
  const walked = new Set<string>();
  const trail = [start.externalId];
  const walk = (externalId: string): string[] | undefined => {
    if (externalId === start.externalId) return [...trail, externalId];
    // Walked before: it does not reach `start` (or that path was returned); a cycle elsewhere is reported when that one is saved.
    if (walked.has(externalId)) return undefined;
    walked.add(externalId);
    const next = references(externalId);
    if (next === undefined) return undefined;
    trail.push(externalId);
    for (const u of expressionUses(next)) {
      const found = walk(u);
      if (found !== undefined) return found;
    }
    trail.pop();
    return undefined;
  };
  for (const u of expressionUses(start)) {
    const found = walk(u);
    if (found !== undefined) return found;
  }
  return undefined;
}
