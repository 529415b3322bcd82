import type { Deadline } from "./deadline.js";
import type { Step } from "./steps.js";

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
