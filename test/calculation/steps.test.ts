import { expect } from "chai";
import { checkCalculation, type CalculationDefinitionInput } from "../../src/calculation/definition.js";
import { Deadline } from "../../src/calculation/deadline.js";
import { evaluateBuckets, evaluateValue, type EvaluationInputs } from "../../src/calculation/evaluate.js";
import type { CompiledExpression } from "../../src/calculation/expression.js";
import { EXPRESSION_LIMIT_CEILINGS } from "../../src/calculation/expression-size.js";
import { orderSteps, type Step } from "../../src/calculation/steps.js";
import { ProblemError } from "../../src/errors.js";

const MAX_STEPS = 1000;
const LIMITS = { maxSteps: MAX_STEPS, expression: EXPRESSION_LIMIT_CEILINGS };

/** s0 = a + 1, s1 = s0 + 1, … : the last step is a + n. Listed last step first, so ordering has all the work. */
function chain(n: number): CalculationDefinitionInput {
  const steps = Array.from({ length: n }, (_, i) => ({ name: `s${i}`, expression: i === 0 ? "a + 1" : `s${i - 1} + 1` })).reverse();
  return { externalId: "chain", calculationType: "CALCULATION", data: { calculation: { steps, output: `s${n - 1}`, scope: { a: { type: "VALUE", value: 1 } } } } };
}

const inputs = (starts: number[], constants: Record<string, number | null> = {}): EvaluationInputs => ({
  starts,
  end: (starts[starts.length - 1] ?? 0) + 1000,
  from: starts[0] ?? 0,
  to: (starts[starts.length - 1] ?? 0) + 1000,
  now: 0,
  constants: new Map(Object.entries(constants)),
  series: new Map(),
});

describe("calculation steps", () => {
  it("orders and evaluates a chain as long as the step limit to its exact result", async () => {
    const { compiled, problems } = await checkCalculation(chain(MAX_STEPS), () => undefined, LIMITS);
    expect(problems).to.deep.equal([]);
    expect(compiled!.steps.map((s) => s.name).slice(0, 3)).to.deep.equal(["s0", "s1", "s2"]);
    expect(compiled!.steps).to.have.length(MAX_STEPS);
    expect(evaluateValue(compiled!.steps, compiled!.output, inputs([], { a: 1 }), Deadline.unlimited())).to.equal(1 + MAX_STEPS);
    const buckets = await evaluateBuckets(compiled!.steps, compiled!.output, inputs([0, 1000, 2000], { a: 5 }), Deadline.unlimited());
    expect(buckets).to.deep.equal([5 + MAX_STEPS, 5 + MAX_STEPS, 5 + MAX_STEPS]);
  });

  it("refuses one step over the limit, naming it, before compiling any step", async () => {
    const tooMany = chain(MAX_STEPS + 1);
    // Expressions that would not compile: only the limit is reported, so none was compiled.
    tooMany.data.calculation!.steps![0]!.expression = "import({})";
    const { compiled, problems } = await checkCalculation(tooMany, () => undefined, LIMITS);
    expect(compiled).to.equal(undefined);
    expect(problems).to.deep.equal([{ path: "data.calculation.steps", message: "a CALCULATION may have at most 1000 steps (CALCULATION_MAX_STEPS); this one has 1001" }]);
  });

  it("refuses steps that are not an array, instead of failing on them", async () => {
    const odd = { externalId: "odd", calculationType: "CALCULATION", data: { calculation: { steps: "s0 = 1", output: "s0" } } } as unknown as CalculationDefinitionInput;
    expect((await checkCalculation(odd, () => undefined, LIMITS)).problems).to.deep.equal([{ path: "data.calculation.steps", message: "steps is an array of { name, expression }" }]);
  });

  it("orders a chain of 100,000 steps without recursion, and names a cycle and a step that reads itself", () => {
    const stub = (reads: string[]): CompiledExpression => ({ text: "", variables: new Set(reads), evaluate: () => null, evaluateIn: () => null });
    const n = 100_000;
    const steps = new Map<string, CompiledExpression>();
    for (let i = n - 1; i >= 0; i--) steps.set(`s${i}`, stub(i === 0 ? [] : [`s${i - 1}`]));
    const ordered = orderSteps(steps, () => expect.fail("no problem expected"))!;
    expect(ordered).to.have.length(n);
    expect(ordered.every((s, i) => s.name === `s${i}`)).to.equal(true);

    const problems: string[] = [];
    const report = (_: string, message: string) => problems.push(message);
    expect(orderSteps(new Map([["out", stub(["x"])], ["x", stub(["y"])], ["y", stub(["out"])]]), report)).to.equal(undefined);
    expect(orderSteps(new Map([["a", stub(["b"])], ["b", stub(["b"])]]), report)).to.equal(undefined);
    expect(problems).to.deep.equal(["steps depend on each other in a cycle: out → x → y → out", 'step "b" reads itself']);
  });

  it("walks a diamond of references 40 levels deep once per definition, and still finds a cycle through it", async () => {
    // d0 → d1 (twice) → … → d39: a walk of every path would take 2^40 visits.
    const definition = (i: number, next: string | undefined): CalculationDefinitionInput => ({
      externalId: `d${i}`,
      calculationType: "EXPRESSION",
      data: { calculation: { expression: next === undefined ? "1" : "x + y", scope: next === undefined ? {} : { x: { type: "EXPRESSION", expression: next }, y: { type: "EXPRESSION", expression: next } } } },
    });
    const stored = new Map(Array.from({ length: 40 }, (_, i) => [`d${i}`, definition(i, i < 39 ? `d${i + 1}` : undefined)]));
    const walked: string[] = [];
    const references = (id: string) => {
      walked.push(id);
      return stored.get(id);
    };
    expect((await checkCalculation(stored.get("d0")!, references, LIMITS)).problems).to.deep.equal([]);
    // d1 twice when d0's two scopes are checked, then d1 … d39 once each by the cycle walk.
    expect(walked).to.have.length(2 + 39);
    // d39 now reads d0: saving d0 again finds d0 → d1 → … → d39 → d0.
    stored.set("d39", definition(39, "d0"));
    const { problems } = await checkCalculation(stored.get("d0")!, (id) => stored.get(id), LIMITS);
    expect(problems.map((p) => p.message)).to.deep.equal([`reference cycle: ${Array.from({ length: 40 }, (_, i) => `d${i}`).join(" → ")} → d0`]);
  });
});

describe("calculation deadline", () => {
  /** A clock that moves `step` ms at every read, counting them. */
  const steppingClock = (step: number) => {
    const clock = Object.assign(() => clock.reads++ * step, { reads: 0 });
    return clock;
  };

  it("reads the clock once per 1000 units of work and stops the work past the deadline with a 422 naming the limit", () => {
    const clock = steppingClock(30);
    const deadline = Deadline.after(50, clock); // reads 0 (deadline 50) and 30 (the slice starts)
    for (let i = 0; i < 999; i++) deadline.tick();
    expect(clock.reads).to.equal(2);
    let stopped: unknown;
    try {
      deadline.tick(); // the 1000th unit: reads 60, past 50
    } catch (err) {
      stopped = err;
    }
    expect(clock.reads).to.equal(3);
    expect((stopped as ProblemError).toProblem()).to.deep.include({ status: 422, code: "CALCULATION_FAILED", detail: "the calculation ran longer than 50 ms and was stopped" });
  });

  it("is checked inside the bucket loop: a long calculation stops after exactly the work of one check interval", async () => {
    let evaluations = 0;
    const counting: CompiledExpression = { text: "1", variables: new Set(), evaluate: () => 1, evaluateIn: () => ++evaluations };
    const steps: Step[] = Array.from({ length: 10 }, (_, i) => ({ name: `s${i}`, expression: counting }));
    const starts = Array.from({ length: 100_000 }, (_, i) => i * 300_000);
    let stopped: unknown;
    try {
      await evaluateBuckets(steps, "s9", inputs(starts), Deadline.after(50, steppingClock(30)));
    } catch (err) {
      stopped = err;
    }
    expect((stopped as ProblemError).code).to.equal("CALCULATION_FAILED");
    expect((stopped as ProblemError).message).to.equal("the calculation ran longer than 50 ms and was stopped");
    // 100 buckets × 10 steps: the first clock read after the start is the one past the deadline.
    expect(evaluations).to.equal(1000);
  });

  it("yields to the event loop once the work has held it for a slice", async () => {
    const clock = steppingClock(25); // every read is a slice later than the last
    const deadline = Deadline.after(1_000_000, clock);
    let yielded = false;
    setImmediate(() => (yielded = true));
    expect(deadline.tick(1000)).to.equal(true);
    await deadline.yield();
    expect(yielded).to.equal(true);
    expect(deadline.tick(999)).to.equal(false);
  });
});
