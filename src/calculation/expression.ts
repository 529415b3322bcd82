import { all, create, type MathNode } from "mathjs";
import { compileToClosures, LeavesRealNumbers, type MathNamespace, type Registers, type Value } from "./expression-closures.js";
import { recordFill } from "./record-fill.js";
import { expressionSizeProblem, type ExpressionLimits } from "./expression-size.js";

/** Variables every expression may use besides its scope names (spec §2.2). */
export const INTERNAL_VARIABLES = ["time", "from", "to", "interval", "now", "index", "previousValue", "previousPreviousValue", "firstValue"] as const;

/** Pure functions an expression may call; anything else (import, evaluate, parse, simplify, derivative, createUnit …) is refused. */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  "abs", "sqrt", "cbrt", "exp", "expm1", "log", "log10", "log2", "log1p", "pow", "min", "max", "mean", "median", "sum", "prod",
  "round", "floor", "ceil", "fix", "sign", "mod", "hypot", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
  "isNaN", "not", "and", "or", "xor", "equal", "unequal", "larger", "smaller", "largerEq", "smallerEq", "clamp",
]);
export const ALLOWED_CONSTANTS: ReadonlySet<string> = new Set(["pi", "e", "PI", "E", "tau", "phi"]);
const OPERATOR_NODES = new Set(["OperatorNode", "ParenthesisNode", "ConditionalNode", "ConstantNode", "SymbolNode", "FunctionNode"]);

// One restricted instance: the functions an attacker would reach for are replaced by refusals,
// behind the syntax check below that already never lets them be called.
const math = create(all);
// Kept for this module before the instance's own `parse` is replaced by a refusal.
const parse = math.parse.bind(math);
/** mathjs's parser of this instance: tests compare the closures with mathjs's evaluation of what it parses. */
export const parseExpression = (text: string): MathNode => parse(text);
const clamp = (x: number, low: number, high: number) => Math.min(Math.max(x, low), high);
math.import({ clamp }, { override: true });
const refuse = (name: string) => () => {
  throw new Error(`${name} is not available in a calculation`);
};
math.import(Object.fromEntries(["import", "createUnit", "evaluate", "parse", "simplify", "derivative", "compile", "resolve", "reviver"].map((n) => [n, refuse(n)])), { override: true });

/** What the closures call and read: mathjs's evaluation namespace (with its transforms), its plain functions and tolerances. */
export const NAMESPACE: MathNamespace = {
  transforms: (math as unknown as { expression: { mathWithTransform: Record<string, unknown> } }).expression.mathWithTransform,
  plain: math as unknown as Record<string, unknown>,
  relTol: (math.config as unknown as () => { relTol: number }).call(math).relTol,
  absTol: (math.config as unknown as () => { absTol: number }).call(math).absTol,
};

export interface ExpressionProblem {
  message: string;
  /** 1-based column in the expression, where known. */
  column?: number;
}

/** An expression checked and compiled once; evaluated per bucket. */
export interface CompiledExpression {
  text: string;
  /** The names it reads: scope names and internal variables. */
  variables: Set<string>;
  evaluate(values: Readonly<Record<string, number | null>>): number | null;
  /**
   * Evaluates in a scope the caller keeps and reuses (every bucket, every step), holding a number
   * for each name the expression reads: NaN for a missing value. Nothing is copied per call.
   */
  evaluateIn(scope: Map<string, number>): number | null;
}

/**
 * Parses an expression and checks it is arithmetic over known names only: numbers, operators,
 * conditionals, the allowed pure functions, constants, and the names in `known` (scope names and
 * internal variables). No assignment, function or unit definition, object, string, matrix or
 * property access. Every problem is returned, with its column where mathjs gives one.
 *
 * Its length and nesting are checked first, by a linear scan: mathjs parses, checks, compiles
 * and evaluates by recursion, and within the limits none of them can overflow the stack.
 */
export function compileExpression(text: string, known: ReadonlySet<string>, limits: ExpressionLimits): { expression?: CompiledExpression; problems: ExpressionProblem[] } {
  const tooLarge = expressionSizeProblem(text, limits);
  if (tooLarge !== undefined) return { problems: [tooLarge] };
  let root: MathNode;
  try {
    root = parse(text);
  } catch (err) {
    const char = (err as { char?: number }).char;
    return { problems: [{ message: `the expression does not parse: ${(err as Error).message}`, ...(typeof char === "number" ? { column: char + 1 } : {}) }] };
  }
  try {
    return checkAndCompile(text, root, known);
  } catch (err) {
    // Not reached within the limits the configuration accepts; kept so that no expression is ever a 500.
    if (err instanceof RangeError) return { problems: [{ message: "the expression nests too deeply to compile; split it into steps" }] };
    throw err;
  }
}

function checkAndCompile(text: string, root: MathNode, known: ReadonlySet<string>): { expression?: CompiledExpression; problems: ExpressionProblem[] } {
  const problems: ExpressionProblem[] = [];
  const variables = new Set<string>();
  root.traverse((node: MathNode, path: string, parent: MathNode | null) => {
    if (!OPERATOR_NODES.has(node.type)) {
      problems.push({ message: `${describe(node)} is not allowed in a calculation: only arithmetic, comparisons, conditionals and pure functions` });
      return;
    }
    if (node.type === "ConstantNode") {
      const value = (node as unknown as { value: unknown }).value;
      if (typeof value !== "number" && typeof value !== "boolean") problems.push({ message: `the constant ${JSON.stringify(value)} is not a number` });
      return;
    }
    if (node.type === "FunctionNode") {
      const fn = (node as unknown as { fn: MathNode }).fn;
      const name = fn.type === "SymbolNode" ? (fn as unknown as { name: string }).name : undefined;
      if (name === undefined || !ALLOWED_FUNCTIONS.has(name)) problems.push({ message: `function ${name ?? "(computed)"} is not allowed; allowed: ${[...ALLOWED_FUNCTIONS].join(", ")}` });
      return;
    }
    if (node.type === "SymbolNode") {
      if (parent?.type === "FunctionNode" && path === "fn") return;
      const name = (node as unknown as { name: string }).name;
      if (known.has(name)) variables.add(name);
      else if (!ALLOWED_CONSTANTS.has(name)) problems.push({ message: `unknown variable "${name}": not a scope name nor an internal variable (${INTERNAL_VARIABLES.join(", ")})` });
    }
  });
  if (problems.length > 0) return { problems };
  const code = root.compile();
  const program = compileToClosures(root, known, NAMESPACE);
  const { run, slots, shadowable } = program;
  const variableList = [...variables];
  // What mathjs gives for a scope, kept for the calls the closures leave to it (see expression-closures.ts).
  const viaMathjs = (scope: Map<string, number>): number | null => {
    let result: unknown;
    try {
      result = code.evaluate(scope);
    } catch {
      return null;
    }
    return finiteOrNull(result);
  };
  // One set of registers per expression, filled anew at every call: evaluation never re-enters.
  const registers: Registers = new Array<number>(slots.length).fill(Number.NaN);
  // The result of the closures on the registers; undefined when they hand the evaluation to mathjs.
  const runClosures = (): number | null | undefined => {
    let result: Value;
    try {
      result = run(registers);
    } catch (err) {
      return err instanceof LeavesRealNumbers ? undefined : null;
    }
    return finiteOrNull(result);
  };
  // A missing value is NaN, so it makes the result not finite, which is null.
  const evaluateIn = (scope: Map<string, number>): number | null => {
    for (let i = 0; i < slots.length; i++) {
      const value = scope.get(slots[i]!);
      // Not a number (a name the scope lacks): mathjs decides what that means.
      if (typeof value !== "number") return viaMathjs(scope);
      registers[i] = value;
    }
    // mathjs reads a constant or a function from the scope when the scope holds its name.
    for (const name of shadowable) if (scope.has(name)) return viaMathjs(scope);
    const result = runClosures();
    return result === undefined ? viaMathjs(scope) : result;
  };
  // The scope `evaluate` gives mathjs holds the variables only: a function called by the name of a variable is mathjs's to answer.
  const fill = recordFill(slots);
  const shadowedByVariable = shadowable.some((name) => variables.has(name));
  const mathjsScope = (values: Readonly<Record<string, number | null>>) => {
    const scope = new Map<string, number>();
    // Own properties only: a name like `constructor` is a missing value, never the prototype's member.
    for (const name of variableList) scope.set(name, (Object.hasOwn(values, name) ? values[name] : undefined) ?? Number.NaN);
    return scope;
  };
  const expression: CompiledExpression = {
      text,
      variables,
      evaluateIn,
      evaluate(values) {
        if (shadowedByVariable) return viaMathjs(mathjsScope(values));
        if (!fill(values, registers)) return viaMathjs(mathjsScope(values));
        const result = runClosures();
        return result === undefined ? viaMathjs(mathjsScope(values)) : result;
      },
  };
  mathjsEvaluations.set(expression, (values) => viaMathjs(mathjsScope(values)));
  return { problems, expression };
}

const mathjsEvaluations = new WeakMap<CompiledExpression, (values: Readonly<Record<string, number | null>>) => number | null>();

/** `expression.evaluate` by mathjs's own evaluation: the reference the closures are tested and measured against. */
export function evaluateWithMathjs(expression: CompiledExpression, values: Readonly<Record<string, number | null>>): number | null {
  const evaluate = mathjsEvaluations.get(expression);
  if (evaluate === undefined) throw new Error("not an expression compiled by compileExpression");
  return evaluate(values);
}

/** The result of a calculation: a boolean as 0 or 1, a finite number, else null (shared/SEMANTICS.md). */
function finiteOrNull(result: unknown): number | null {
  const n = typeof result === "boolean" ? Number(result) : result;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
}

function describe(node: MathNode): string {
  switch (node.type) {
    case "AssignmentNode":
      return "an assignment";
    case "FunctionAssignmentNode":
      return "a function definition";
    case "AccessorNode":
    case "IndexNode":
      return "property or index access";
    case "ObjectNode":
      return "an object";
    case "ArrayNode":
      return "a matrix";
    case "BlockNode":
      return "several statements";
    case "RangeNode":
      return "a range";
    default:
      return node.type;
  }
}
