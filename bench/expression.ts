/**
 * Bucket evaluations per second of a calculation expression (mathjs, compiled once, checked, with
 * the null handling of shared/SEMANTICS.md) next to the same formula as a plain JavaScript
 * function, in the same run.
 *
 *   npm run build && node dist/bench/expression.js [--buckets=1000000]
 */
import { compileExpression, INTERNAL_VARIABLES } from "../src/calculation/expression.js";
import { EXPRESSION_LIMIT_CEILINGS } from "../src/calculation/expression-size.js";
import { option } from "./harness.js";

const buckets = Number(option("buckets", "1000000"));
const FORMULA = "(a - b) * f + (index == 0 ? 0 : previousValue) * 0.5";

function main(): void {
  const { expression } = compileExpression(FORMULA, new Set(["a", "b", "f", ...INTERNAL_VARIABLES]), EXPRESSION_LIMIT_CEILINGS);
  if (expression === undefined) throw new Error("the formula does not compile");
  const plain = (v: Record<string, number | null>) => {
    const r = ((v.a ?? NaN) - (v.b ?? NaN)) * (v.f ?? NaN) + (v.index === 0 ? 0 : (v.previousValue ?? NaN)) * 0.5;
    return Number.isFinite(r) ? r : null;
  };
  const a = Array.from({ length: buckets }, (_, i) => (i % 97) / 7);
  const b = Array.from({ length: buckets }, (_, i) => (i % 31) / 3);
  const run = (fn: (v: Record<string, number | null>) => number | null) => {
    const started = performance.now();
    let previous: number | null = null;
    let checksum = 0;
    for (let i = 0; i < buckets; i++) {
      previous = fn({ a: a[i]!, b: b[i]!, f: 2, index: i, previousValue: previous });
      checksum += previous ?? 0;
    }
    return { ms: performance.now() - started, checksum };
  };
  run(plain); // warm-up
  run((v) => expression.evaluate(v));
  const baseline = run(plain);
  const ours = run((v) => expression.evaluate(v));
  if (Math.abs(baseline.checksum - ours.checksum) > 1e-6 * Math.abs(baseline.checksum)) throw new Error(`results differ: ${baseline.checksum} vs ${ours.checksum}`);
  const rate = (ms: number) => Math.round(buckets / (ms / 1000)).toLocaleString("en");
  console.log(`formula: ${FORMULA}`);
  console.log(`plain JavaScript function: ${rate(baseline.ms)} bucket evaluations/s (${baseline.ms.toFixed(0)} ms for ${buckets.toLocaleString("en")})`);
  console.log(`compiled mathjs expression: ${rate(ours.ms)} bucket evaluations/s (${ours.ms.toFixed(0)} ms)`);
  console.log(`ratio: the expression takes ${(ours.ms / baseline.ms).toFixed(1)}x the time of the plain function`);
}

main();
