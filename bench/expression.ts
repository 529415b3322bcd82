/**
 * Bucket evaluations per second of a calculation expression (checked, compiled once to closures,
 * with the null handling of shared/SEMANTICS.md) next to the same formula as a plain JavaScript
 * function and to mathjs's own compiled evaluation of it, all three in the same run.
 *
 *   npm run build && node dist/bench/expression.js [--buckets=1000000] [--rounds=5]
 */
import { compileExpression, evaluateWithMathjs, INTERNAL_VARIABLES } from "../src/calculation/expression.js";
import { EXPRESSION_LIMIT_CEILINGS } from "../src/calculation/expression-size.js";
import { option } from "./harness.js";

const buckets = Number(option("buckets", "1000000"));
const FORMULA = "(a - b) * f + (index == 0 ? 0 : previousValue) * 0.5";

type Evaluate = (v: Record<string, number | null>) => number | null;

function main(): void {
  const { expression } = compileExpression(FORMULA, new Set(["a", "b", "f", ...INTERNAL_VARIABLES]), EXPRESSION_LIMIT_CEILINGS);
  if (expression === undefined) throw new Error("the formula does not compile");
  const plain: Evaluate = (v) => {
    const r = ((v.a ?? NaN) - (v.b ?? NaN)) * (v.f ?? NaN) + (v.index === 0 ? 0 : (v.previousValue ?? NaN)) * 0.5;
    return Number.isFinite(r) ? r : null;
  };
  const closures: Evaluate = (v) => expression.evaluate(v);
  const mathjs: Evaluate = (v) => evaluateWithMathjs(expression, v);
  const a = Array.from({ length: buckets }, (_, i) => (i % 97) / 7);
  const b = Array.from({ length: buckets }, (_, i) => (i % 31) / 3);
  // CPU time of this process, not the wall clock: other work on the machine does not count.
  const run = (fn: Evaluate) => {
    const started = process.cpuUsage();
    let previous: number | null = null;
    let checksum = 0;
    for (let i = 0; i < buckets; i++) {
      previous = fn({ a: a[i]!, b: b[i]!, f: 2, index: i, previousValue: previous });
      checksum += previous ?? 0;
    }
    const used = process.cpuUsage(started);
    return { ms: (used.user + used.system) / 1000, checksum };
  };
  // Warm-up of each, then rounds measuring each in turn; the fastest round of each counts (the
  // machine is shared: a slower round was disturbed, a faster one cannot be).
  for (const fn of [plain, closures, mathjs]) run(fn);
  const rounds = Number(option("rounds", "5"));
  let baseline = run(plain);
  let ours = run(closures);
  let reference = run(mathjs);
  const faster = (x: typeof baseline, y: typeof baseline) => (y.ms < x.ms ? y : x);
  for (let round = 1; round < rounds; round++) {
    baseline = faster(baseline, run(plain));
    ours = faster(ours, run(closures));
    if (round < 2) reference = faster(reference, run(mathjs));
  }
  for (const [name, result] of [["closures", ours], ["mathjs", reference]] as const) {
    if (result.checksum !== baseline.checksum) throw new Error(`${name} differ from the plain function: ${result.checksum} vs ${baseline.checksum}`);
  }
  const rate = (ms: number) => Math.round(buckets / (ms / 1000)).toLocaleString("en");
  console.log(`formula: ${FORMULA}`);
  console.log(`plain JavaScript function (baseline): ${rate(baseline.ms)} bucket evaluations/s (${baseline.ms.toFixed(0)} ms of CPU for ${buckets.toLocaleString("en")})`);
  console.log(`expression compiled to closures:      ${rate(ours.ms)} bucket evaluations/s (${ours.ms.toFixed(0)} ms)`);
  console.log(`mathjs compiled evaluation:           ${rate(reference.ms)} bucket evaluations/s (${reference.ms.toFixed(0)} ms)`);
  console.log(`ratio closures / plain: ${(ours.ms / baseline.ms).toFixed(2)}x the time of the plain function (goal <= 1.5x)`);
  console.log(`ratio mathjs / plain:   ${(reference.ms / baseline.ms).toFixed(2)}x`);
  console.log(`ratio mathjs / closures: ${(reference.ms / ours.ms).toFixed(1)}x`);
}

main();
