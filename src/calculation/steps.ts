import type { ProblemDetail } from "../errors.js";
import type { Deadline } from "./deadline.js";
import { compileExpression, INTERNAL_VARIABLES, type CompiledExpression } from "./expression.js";
import type { ExpressionLimits } from "./expression-size.js";

export interface Step {
  name: string;
  expression: CompiledExpression;
}

export interface StepLimits {
  /** CALCULATION_MAX_STEPS: most steps of one CALCULATION. */
  maxSteps: number;
  expression: ExpressionLimits;
}

/** The parts of a calculation block that say what is computed. */
export interface StepSource {
  expression?: unknown;
  steps?: unknown;
  output?: unknown;
}

type Report = (path: string, message: string, extra?: Partial<ProblemDetail>) => void;

const STEP_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
export const RESULT_STEP = "result";

/**
 * The expression of an EXPRESSION or STATE-EXPRESSION (one step named `result`), or the steps of
 * a CALCULATION, checked and compiled, in an order where each step comes after those it reads.
 * Linear in the steps and what they read: too many steps are refused before any is compiled,
 * every name is looked up in one set, and the order comes from one depth-first walk. Compiling
 * yields to the event loop as `pace` says. Undefined when a problem was reported.
 */
export async function checkSteps(
  model: boolean,
  source: StepSource,
  scopeNames: readonly string[],
  limits: StepLimits,
  pace: Deadline,
  problem: Report,
): Promise<{ steps: Step[]; output: string } | undefined> {
  const raw = model ? source.steps ?? [] : [{ name: RESULT_STEP, expression: source.expression }];
  if (!Array.isArray(raw)) {
    problem("data.calculation.steps", "steps is an array of { name, expression }");
    return undefined;
  }
  if (model && raw.length > limits.maxSteps) {
    problem("data.calculation.steps", `a CALCULATION may have at most ${limits.maxSteps} steps (CALCULATION_MAX_STEPS); this one has ${raw.length}`);
    return undefined;
  }
  if (model && raw.length === 0) problem("data.calculation.steps", "a CALCULATION needs steps: [{ name, expression }]");
  const steps = raw as { name?: unknown; expression?: unknown }[];

  const known = new Set<string>([...scopeNames, ...INTERNAL_VARIABLES]);
  const stepNames = new Set<string>();
  if (model) {
    steps.forEach((step, i) => {
      const name = step?.name;
      if (typeof name !== "string" || !STEP_NAME.test(name)) problem(`data.calculation.steps[${i}].name`, "a step name must start with a letter");
      else if (stepNames.has(name) || known.has(name)) problem(`data.calculation.steps[${i}].name`, `step name "${name}" is used twice`);
      if (typeof name === "string") stepNames.add(name);
    });
  }
  for (const name of stepNames) known.add(name);

  const compiled = new Map<string, CompiledExpression>();
  for (const [i, step] of steps.entries()) {
    const path = model ? `data.calculation.steps[${i}].expression` : "data.calculation.expression";
    const text = step?.expression;
    if (typeof text !== "string" || text.trim() === "") {
      problem(path, "an expression is required");
      continue;
    }
    const { expression, problems } = compileExpression(text, known, limits.expression);
    for (const p of problems) problem(path, p.message, p.column !== undefined ? { column: p.column } : {});
    if (expression !== undefined) compiled.set(String(step.name), expression);
    if (pace.tick(text.length + 1)) await pace.yield();
  }
  const output = model ? (typeof source.output === "string" ? source.output : "") : RESULT_STEP;
  if (model && !stepNames.has(output)) problem("data.calculation.output", "output must name one of the steps");
  const ordered = orderSteps(compiled, problem);
  return ordered === undefined ? undefined : { steps: ordered, output };
}

/**
 * The steps in dependency order (each after the steps it reads), by one depth-first walk with
 * an explicit stack: a chain of thousands of steps neither recurses nor copies its path. A cycle
 * is reported, named, and gives undefined.
 */
export function orderSteps(steps: ReadonlyMap<string, CompiledExpression>, problem: (path: string, message: string) => void): Step[] | undefined {
  const ordered: Step[] = [];
  const state = new Map<string, "visiting" | "done">();
  for (const root of steps.keys()) {
    if (state.has(root)) continue;
    const path: { name: string; reads: Iterator<string> }[] = [];
    const enter = (name: string) => {
      state.set(name, "visiting");
      path.push({ name, reads: steps.get(name)!.variables.values() });
    };
    enter(root);
    while (path.length > 0) {
      const top = path[path.length - 1]!;
      const read = top.reads.next();
      if (!read.done) {
        const name = read.value;
        if (!steps.has(name) || name === top.name || state.get(name) === "done") continue;
        if (state.get(name) === "visiting") {
          const from = path.findIndex((p) => p.name === name);
          problem("data.calculation.steps", `steps depend on each other in a cycle: ${[...path.slice(from).map((p) => p.name), name].join(" → ")}`);
          return undefined;
        }
        enter(name);
        continue;
      }
      const expression = steps.get(top.name)!;
      if (expression.variables.has(top.name)) {
        problem("data.calculation.steps", `step "${top.name}" reads itself`);
        return undefined;
      }
      state.set(top.name, "done");
      ordered.push({ name: top.name, expression });
      path.pop();
    }
  }
  return ordered;
}
