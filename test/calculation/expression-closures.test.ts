import { expect } from "chai";
import fc from "fast-check";
import { compileToClosures, LeavesRealNumbers, type Registers, type Value } from "../../src/calculation/expression-closures.js";
import { recordFill } from "../../src/calculation/record-fill.js";
import { ALLOWED_CONSTANTS, ALLOWED_FUNCTIONS, compileExpression, evaluateWithMathjs, INTERNAL_VARIABLES, NAMESPACE, parseExpression } from "../../src/calculation/expression.js";
import { EXPRESSION_LIMIT_CEILINGS } from "../../src/calculation/expression-size.js";

/**
 * The closures against mathjs's own evaluation, on expressions drawn from the grammar the checker
 * accepts: every operator the parser makes, conditionals, every allowed function (with right and
 * wrong numbers of arguments), constants, booleans and scope names, nested; scopes with nulls,
 * NaN, ±Infinity, -0, huge and tiny numbers.
 */

const VARIABLES = ["a", "b", "c", "index", "previousValue"];
// Names of the scope that are also a function and a constant of mathjs: mathjs reads them from the scope.
const SHADOWING = ["max", "tau"];
const KNOWN = new Set([...VARIABLES, ...SHADOWING, ...INTERNAL_VARIABLES]);

const BINARY = ["+", "-", "*", "/", "^", "%", "mod", ".*", "./", ".^", "==", "!=", "<", ">", "<=", ">=", "and", "or", "xor", "&", "|", "^|", "<<", ">>", ">>>", "??", "to", ""];
const PREFIX = ["-", "+", "not ", "~"];
const POSTFIX = ["!", "'", "%"];
// The operators that fail on most numbers (bitwise ones want integers, `to` units) are drawn less often, or most trees would fail whole.
const FAILING_OFTEN = new Set(["&", "|", "^|", "<<", ">>", ">>>", "to"]);
const operator = fc.oneof({ arbitrary: fc.constantFrom(...BINARY.filter((op) => !FAILING_OFTEN.has(op))), weight: 8 }, { arbitrary: fc.constantFrom(...FAILING_OFTEN), weight: 1 });
const LITERALS = ["0", "1", "2", "3", "0.5", "0.1", "10", "1e308", "1e-320", "1e400", "2.5e-7", "123456789", "0x1F", "true", "false", ".2"];

const value = fc.oneof(
  fc.constantFrom(null, Number.NaN, Infinity, -Infinity, 0, -0, 1, -1, 2, 0.5, -2.5, 1e308, -1e308, Number.MIN_VALUE, 1e-300, Number.MAX_SAFE_INTEGER, 3),
  fc.double(),
  fc.integer({ min: -20, max: 20 }),
);

function expressionOf(depth: number): fc.Arbitrary<string> {
  const leaf = fc.oneof(fc.constantFrom(...LITERALS), fc.constantFrom(...VARIABLES, ...SHADOWING), fc.constantFrom(...ALLOWED_CONSTANTS));
  if (depth === 0) return leaf;
  const sub = expressionOf(depth - 1);
  return fc.oneof(
    { arbitrary: leaf, weight: 2 },
    { arbitrary: fc.tuple(sub, operator, sub).map(([x, op, y]) => `(${x} ${op} ${y})`), weight: 4 },
    { arbitrary: fc.tuple(fc.constantFrom(...PREFIX), sub).map(([op, x]) => `(${op}${x})`), weight: 1 },
    { arbitrary: fc.tuple(sub, fc.constantFrom(...POSTFIX)).map(([x, op]) => `((${x})${op})`), weight: 1 },
    { arbitrary: fc.tuple(sub, sub, sub).map(([c, t, f]) => `(${c} ? ${t} : ${f})`), weight: 2 },
    { arbitrary: callOf(fc.constantFrom(...ALLOWED_FUNCTIONS), sub), weight: 4 },
  );
}

function callOf(name: fc.Arbitrary<string>, sub: fc.Arbitrary<string>): fc.Arbitrary<string> {
  // Mostly as many arguments as the function takes; now and then any number from none to four, which most refuse.
  return name.chain((fn) => {
    const [least, most] = ARITY[fn] ?? [1, 1];
    const args = fc.oneof({ arbitrary: fc.array(sub, { minLength: least, maxLength: most }), weight: 6 }, { arbitrary: fc.array(sub, { minLength: 0, maxLength: 4 }), weight: 1 });
    return args.map((list) => `${fn}(${list.join(", ")})`);
  });
}

/** How many arguments an allowed function takes, where not exactly one. */
const ARITY: Record<string, [number, number]> = {
  ...Object.fromEntries(["pow", "mod", "atan2", "equal", "unequal", "larger", "smaller", "largerEq", "smallerEq", "and", "or", "xor"].map((fn) => [fn, [2, 2]])),
  ...Object.fromEntries(["min", "max", "mean", "median", "sum", "prod", "hypot"].map((fn) => [fn, [1, 3]])),
  log: [1, 2],
  round: [1, 2],
  floor: [1, 2],
  ceil: [1, 2],
  fix: [1, 2],
  clamp: [3, 3],
};

const scopeOf = fc.record(Object.fromEntries([...KNOWN].map((name) => [name, value])) as Record<string, fc.Arbitrary<number | null>>);

/** mathjs's value of the text (a number, boolean, complex …) or the error it throws. */
function mathjsValue(text: string, scope: Map<string, number>): { value?: unknown; error?: unknown } {
  try {
    return { value: parseExpression(text).compile().evaluate(scope) };
  } catch (error) {
    return { error };
  }
}

/** The closures' value of the text, before the mapping to a result: what they computed, an error, or a hand-over to mathjs. */
function closureValue(text: string, scope: Map<string, number>): { value?: Value; error?: unknown; leaves?: true } {
  const program = compileToClosures(parseExpression(text), KNOWN, NAMESPACE);
  // A function or constant named like a scope name is read from the scope by mathjs: the closures hand over (as evaluateIn does).
  if (program.shadowable.some((name) => scope.has(name))) return { leaves: true };
  const registers = program.slots.map((name) => scope.get(name)!);
  try {
    return { value: program.run(registers) };
  } catch (error) {
    return error instanceof LeavesRealNumbers ? { leaves: true } : { error };
  }
}

let handedOver = 0;
let compared = 0;
let failed = 0;

/** Checks one expression against mathjs in every way it is evaluated; false when the checker refuses it. */
function agrees(text: string, values: Record<string, number | null>): boolean {
  const { expression } = compileExpression(text, KNOWN, EXPRESSION_LIMIT_CEILINGS);
  if (expression === undefined) return false;
  const reference = evaluateWithMathjs(expression, values);
  const result = expression.evaluate(values);
  expect(Object.is(result, reference), `${text} with ${JSON.stringify(values)}: closures ${result}, mathjs ${reference}`).to.equal(true);

  // The scope the service keeps: every known name, NaN for a missing value.
  const scope = new Map<string, number>([...KNOWN].map((name) => [name, values[name] ?? Number.NaN]));
  let mathjsResult: number | null;
  const raw = mathjsValue(text, scope);
  if (raw.error !== undefined) mathjsResult = null;
  else {
    const n = typeof raw.value === "boolean" ? Number(raw.value) : raw.value;
    mathjsResult = typeof n === "number" && Number.isFinite(n) ? n : null;
  }
  const inScope = expression.evaluateIn(scope);
  expect(Object.is(inScope, mathjsResult), `${text} in the full scope: closures ${inScope}, mathjs ${mathjsResult}`).to.equal(true);

  // Before the mapping to a result: the same number (NaN, ±Infinity, -0 told apart) or boolean, or both an error.
  {
    const mine = closureValue(text, scope);
    if (mine.leaves) handedOver++;
    else if (mine.error !== undefined) {
      failed++;
      expect(raw.error, `${text}: the closures fail (${String(mine.error)}), mathjs gives ${String(raw.value)}`).to.not.equal(undefined);
    } else {
      compared++;
      expect(raw.error, `${text}: mathjs fails (${String(raw.error)}), the closures give ${mine.value}`).to.equal(undefined);
      expect(Object.is(mine.value, raw.value), `${text}: closures ${String(mine.value)}, mathjs ${String(raw.value)}`).to.equal(true);
    }
  }
  return true;
}

describe("expressions compiled to closures", () => {
  it("give mathjs's result on random nested expressions of the accepted grammar, with random scopes", () => {
    compared = 0;
    handedOver = 0;
    failed = 0;
    fc.assert(
      fc.property(expressionOf(4), scopeOf, (text, values) => {
        fc.pre(agrees(text, values));
      }),
      { numRuns: 3000 },
    );
    // Most raw values were compared; the closures left some evaluations to mathjs (complex values, shadowed names).
    expect(compared, `${compared} compared, ${failed} failed in both, ${handedOver} handed over`).to.be.greaterThan(1000);
    expect(handedOver).to.be.lessThan(compared);
  });

  for (const fn of ALLOWED_FUNCTIONS) {
    it(`give mathjs's result for ${fn}(…) with any arguments`, () => {
      fc.assert(
        fc.property(callOf(fc.constant(fn), expressionOf(2)), scopeOf, (text, values) => {
          fc.pre(agrees(text, values));
        }),
        { numRuns: 150 },
      );
    });
  }

  for (const op of BINARY) {
    it(`give mathjs's result for the operator "${op || "implicit multiplication"}"`, () => {
      fc.assert(
        fc.property(expressionOf(2), expressionOf(2), scopeOf, (x, y, values) => {
          fc.pre(agrees(`(${x}) ${op} (${y})`, values));
        }),
        { numRuns: 150 },
      );
    });
  }

  it("give mathjs's result for prefix and postfix operators and conditionals", () => {
    fc.assert(
      fc.property(fc.constantFrom(...PREFIX.map((p) => `${p}(X)`), ...POSTFIX.map((p) => `(X)${p}`), "(X) ? (Y) : (Z)"), expressionOf(2), expressionOf(2), expressionOf(2), scopeOf, (form, x, y, z, values) => {
        fc.pre(agrees(form.replace("X", x).replace("Y", y).replace("Z", z), values));
      }),
      { numRuns: 600 },
    );
  });
});

describe("expressions compiled to closures: edge cases", () => {
  const known = new Set(["a", "b", "max", ...INTERNAL_VARIABLES]);
  const compile = (text: string, names: ReadonlySet<string> = known) => {
    const { expression, problems } = compileExpression(text, names, EXPRESSION_LIMIT_CEILINGS);
    expect(problems).to.deep.equal([]);
    return expression!;
  };
  /** The closures' result, after checking mathjs gives the very same. */
  const evaluate = (text: string, values: Record<string, number | null> = {}) => {
    const expression = compile(text);
    const result = expression.evaluate(values);
    expect(Object.is(result, evaluateWithMathjs(expression, values)), text).to.equal(true);
    return result;
  };

  it("compares with mathjs's relative tolerance, not exactly", () => {
    expect(evaluate("0.1 + 0.2 == 0.3")).to.equal(1);
    expect(evaluate("a == 0", { a: 1e-16 })).to.equal(1);
    expect(evaluate("a == 0", { a: 1e-14 })).to.equal(0);
    expect(evaluate("a < 1", { a: 1 - 1e-13 })).to.equal(0);
    expect(evaluate("a <= b", { a: NaN, b: NaN })).to.equal(0);
  });

  it("keeps -0, turns booleans into 0 and 1, and lets NaN, ±Infinity and a division by zero be null", () => {
    expect(Object.is(evaluate("-a", { a: 0 }), -0)).to.equal(true);
    expect(Object.is(evaluate("-false"), -0)).to.equal(true);
    expect(evaluate("true + true")).to.equal(2);
    expect(evaluate("a > b", { a: 2, b: 1 })).to.equal(1);
    expect(evaluate("1e400")).to.equal(null);
    expect(evaluate("0 / 0")).to.equal(null);
    expect(evaluate("a / b", { a: 1, b: -0 })).to.equal(null);
    expect(evaluate("a ?? 3", { a: null })).to.equal(null); // a missing value is NaN, which is not nullish
  });

  it("hands complex intermediate values to mathjs, whose answer may be real again", () => {
    expect(evaluate("abs(sqrt(-4))")).to.equal(2);
    expect(evaluate("sqrt(-4)")).to.equal(null);
    expect(evaluate("(-8) ^ (1/3)")).to.equal(null);
    expect(evaluate("(-8) ^ 3")).to.equal(-512);
    expect(evaluate("abs(log(-1))")).to.equal(Math.PI);
  });

  it("evaluates and, or, bitwise and, bitwise or and ?? lazily, as mathjs does", () => {
    expect(evaluate("0 and max()")).to.equal(0);
    expect(evaluate("1 and max()")).to.equal(null);
    expect(evaluate("1 or max()")).to.equal(1);
    expect(evaluate("0 & max()")).to.equal(0);
    expect(evaluate("-1 | max()")).to.equal(-1);
    expect(evaluate("2 ?? max()")).to.equal(2);
    expect(evaluate("6 & 3")).to.equal(2);
  });

  it("reads percentages, implicit multiplication and postfix operators as mathjs does", () => {
    expect(evaluate("a + 10%", { a: 50 })).to.equal(55);
    expect(evaluate("2a", { a: 4 })).to.equal(8);
    expect(evaluate("3!")).to.equal(6);
    expect(evaluate("mod(-7, 3)")).to.equal(2);
    expect(evaluate("round(2.5) + floor(-0.5) + ceil(0.2)")).to.equal(3);
  });

  it("leaves to mathjs a function or constant whose name the scope holds, and a name the scope lacks", () => {
    const calls = compile("max(a, 1)");
    expect(calls.evaluate({ a: 5 })).to.equal(5);
    // evaluateIn with the service's scope, which holds the scope name "max": mathjs finds no function there.
    expect(calls.evaluateIn(new Map([["a", 5], ["max", 2]]))).to.equal(null);
    const usesPi = compile("pi * 2", new Set(["a"]));
    expect(usesPi.evaluateIn(new Map([["a", 1]]))).to.equal(2 * Math.PI);
    expect(usesPi.evaluateIn(new Map([["pi", 1]]))).to.equal(2);
    expect(compile("a + 1").evaluateIn(new Map())).to.equal(null);
  });

  it("reads every name of an expression that reads more than eight, a null or missing one as NaN", () => {
    const names = ["a", "b", ...INTERNAL_VARIABLES];
    const text = names.join(" + ");
    const values = Object.fromEntries(names.map((name, i) => [name, i + 1])) as Record<string, number | null>;
    expect(evaluate(text, values)).to.equal((names.length * (names.length + 1)) / 2);
    expect(evaluate(text, { ...values, firstValue: null })).to.equal(null);
    expect(evaluate(`${names.slice(0, 10).join(" + ")} + (firstValue == firstValue)`, values)).to.equal(56);

    const registers: Registers = [];
    expect(recordFill(names)({ ...values, previousPreviousValue: null }, registers)).to.equal(true);
    expect(registers.map((r, i) => (Number.isNaN(r) ? names[i] : r))).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, "previousPreviousValue", 11]);
    // Something else than a number or null: the fill fails, and mathjs evaluates.
    expect(recordFill(names)({ ...values, firstValue: "1" }, registers)).to.equal(false);
  });
});
