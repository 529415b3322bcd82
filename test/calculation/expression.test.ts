import { expect } from "chai";
import fc from "fast-check";
import { compileExpression, INTERNAL_VARIABLES } from "../../src/calculation/expression.js";
import { checkCalculation } from "../../src/calculation/definition.js";
import { EXPRESSION_LIMIT_CEILINGS } from "../../src/calculation/expression-size.js";
import { percentile, reduceValues } from "../../src/calculation/reduce.js";

describe("reductions", () => {
  const values = [7, 1, 3, 9, 5]; // sorted 1 3 5 7 9
  it("gives the exact value of every reduce type", () => {
    expect(reduceValues(values, "sum")).to.equal(25);
    expect(reduceValues(values, "avg")).to.equal(5);
    expect(reduceValues(values, "count")).to.equal(5);
    expect(reduceValues(values, "min")).to.equal(1);
    expect(reduceValues(values, "max")).to.equal(9);
    expect(reduceValues(values, "median")).to.equal(5);
    expect(reduceValues(values, "percentile50")).to.equal(5);
    expect(reduceValues(values, "percentile10")).to.be.closeTo(1.8, 1e-12); // position 0.4: 1 + 0.4·2
    expect(reduceValues(values, "percentile25")).to.equal(3); // position 1
    expect(reduceValues(values, "percentile75")).to.equal(7);
    expect(reduceValues(values, "percentile90")).to.be.closeTo(8.2, 1e-12); // position 3.6: 7 + 0.6·2
    expect(reduceValues(values, "stddev")).to.be.closeTo(Math.sqrt(10), 1e-12); // squares 4+16+4+16+0 = 40, /4
    expect(reduceValues(values, "mad")).to.equal(2); // |x−5| = 2 4 2 4 0 → median 2
    expect(reduceValues([1, 2, 3, 4], "median")).to.equal(2.5);
  });

  it("gives count 0, sum 0 and null otherwise for no values, and 0 stddev for one", () => {
    expect(reduceValues([], "count")).to.equal(0);
    expect(reduceValues([], "sum")).to.equal(0);
    for (const type of ["avg", "min", "max", "median", "stddev", "mad", "percentile90"] as const) expect(reduceValues([], type)).to.equal(null);
    expect(reduceValues([4], "stddev")).to.equal(0);
  });

  it("keeps percentiles between min and max and ordered in p", () => {
    fc.assert(
      fc.property(fc.array(fc.double({ noNaN: true, min: -1e6, max: 1e6 }), { minLength: 1, maxLength: 50 }), (xs) => {
        const sorted = [...xs].sort((a, b) => a - b);
        const ps = [0, 10, 25, 50, 75, 90, 100].map((p) => percentile(sorted, p)!);
        expect(ps[0]).to.equal(sorted[0]);
        expect(ps[6]).to.equal(sorted[sorted.length - 1]);
        for (let i = 1; i < ps.length; i++) expect(ps[i]! >= ps[i - 1]! - 1e-9).to.equal(true);
      }),
    );
  });
});

describe("calculation expressions", () => {
  const known = new Set(["a", "b", ...INTERNAL_VARIABLES]);
  const compile = (text: string) => compileExpression(text, known, EXPRESSION_LIMIT_CEILINGS);

  it("evaluates arithmetic, conditionals and pure functions over the scope", () => {
    const { expression } = compile("(index == 0 ? 0 : previousValue) + max(a, b) * 2 - sqrt(16)");
    expect(expression?.evaluate({ a: 2, b: 3, index: 1, previousValue: 10 })).to.equal(12);
    expect(expression?.evaluate({ a: 2, b: 3, index: 0, previousValue: null })).to.equal(2);
    expect([...expression!.variables].sort()).to.deep.equal(["a", "b", "index", "previousValue"]);
  });

  it("turns a result that is not a finite number into null", () => {
    expect(compile("a / 0").expression?.evaluate({ a: 1 })).to.equal(null);
    expect(compile("a + b").expression?.evaluate({ a: 1, b: null })).to.equal(null);
    expect(compile("log(-1)").expression?.evaluate({})).to.equal(null);
    expect(compile("a ^ 10000").expression?.evaluate({ a: 10 })).to.equal(null);
  });

  for (const [text, problem] of [
    ['import({ x: 1 })', /function import is not allowed/],
    ['createUnit("foo")', /function createUnit is not allowed/],
    ['evaluate("1 + 1")', /function evaluate is not allowed/],
    ['parse("1")', /function parse is not allowed/],
    ["simplify(a)", /function simplify is not allowed/],
    ["derivative(a, b)", /function derivative is not allowed/],
    ["f(x) = x ^ 2", /a function definition is not allowed/],
    ["a = 3", /an assignment is not allowed/],
    ["5 cm", /unknown variable "cm"/],
    ["c + 1", /unknown variable "c"/],
    ["a.constructor", /property or index access is not allowed/],
    ["1 +", /does not parse/],
  ] as const) {
    it(`refuses ${text}`, () => {
      const { expression, problems } = compile(text);
      expect(expression).to.equal(undefined);
      expect(problems.map((p) => p.message).join("\n")).to.match(problem);
    });
  }
});

describe("calculation model checks", () => {
  const model = (steps: { name: string; expression: string }[], output = "out") => ({
    externalId: "m",
    calculationType: "CALCULATION" as const,
    data: { calculation: { steps, output, scope: { a: { type: "VALUE" as const, value: 1 } } } },
  });

  const LIMITS = { maxSteps: 1000, expression: EXPRESSION_LIMIT_CEILINGS };

  it("orders steps by what they read", async () => {
    const { compiled, problems } = await checkCalculation(model([{ name: "out", expression: "mid + 1" }, { name: "mid", expression: "a * 2" }]), () => undefined, LIMITS);
    expect(problems).to.deep.equal([]);
    expect(compiled?.steps.map((s) => s.name)).to.deep.equal(["mid", "out"]);
  });

  it("refuses steps that depend on each other in a cycle, naming it, and an output that is no step", async () => {
    const cyclic = await checkCalculation(model([{ name: "out", expression: "x + 1" }, { name: "x", expression: "y" }, { name: "y", expression: "out" }]), () => undefined, LIMITS);
    expect(cyclic.problems.map((p) => p.message)).to.include("steps depend on each other in a cycle: out → x → y → out");
    const noOutput = await checkCalculation(model([{ name: "mid", expression: "a" }], "missing"), () => undefined, LIMITS);
    expect(noOutput.problems.map((p) => p.path)).to.include("data.calculation.output");
  });
});
