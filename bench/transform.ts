/**
 * A transform through the project's path (rewritten, evaluated in a child process of the transform
 * pool, result size-checked and sent back) next to plain jsonata evaluating the same JSONata in this
 * process, same inputs, same run: the specification's example transform and a heavy one.
 *
 *   npm run build && node dist/bench/transform.js [--runs=2000] [--heavy-runs=100] [--entities=5000] [--concurrency=16]
 *
 * Sequential: one evaluation at a time (latency, the process hop in full). Concurrent: `concurrency`
 * evaluations in flight, as a busy server has them; plain jsonata still runs them one after the
 * other on the one event loop, the pool on its processes.
 */
import jsonata from "jsonata";
import { EXAMPLE_DEFINITION } from "../src/demo/seed.js";
import { TransformPool } from "../src/transform/pool.js";
import type { TransformInput } from "../src/transform/protocol.js";
import { compileTransform, DEFAULT_TRANSFORM_LIMITS, type CompiledTransform } from "../src/transform/transform.js";
import { option, percentile, summary, timeRuns } from "./harness.js";

const runs = Number(option("runs", "2000"));
const heavyRuns = Number(option("heavy-runs", "100"));
const entities = Number(option("entities", "5000"));
const concurrency = Number(option("concurrency", "16"));

const HEAVY = `(
  $points := result(?ap) { id, externalId, kind: accessPointType, value };
  {
    "byKind": $points{ kind: { "count": $count($), "total": $sum(value) } },
    "top": $sort($points, function($a, $b) { $a.value < $b.value })[[0..9]].externalId,
    "names": $join($points[value > 500].externalId, ","),
    "scaled": $points.{ "id": id, "v": $round(value * 1.21, 2) }
  }
)`;

function accessPoints(n: number): Record<string, unknown>[] {
  const kinds = ["ELECTRICITY", "GAS", "WATER", "HEAT"];
  return Array.from({ length: n }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    type: "AccessPoint",
    key: `EAN-${i}`,
    externalId: `5414488200${String(i).padStart(8, "0")}`,
    publicId: `AP-${i}`,
    accessPointType: kinds[i % kinds.length],
    value: (i * 7919) % 1000,
  }));
}

function compile(text: string): CompiledTransform {
  const { transform, problems } = compileTransform(text, { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: 0 });
  if (transform === undefined) throw new Error(JSON.stringify(problems));
  return transform;
}

/** Plain jsonata on the rewritten text, with the bindings the project's path gives it. */
function plain(transform: CompiledTransform, input: TransformInput): () => Promise<unknown> {
  const expression = jsonata(transform.rewritten.source);
  const output = input.queryOutput;
  const bindings: Record<string, unknown> = {
    [transform.rewritten.names.result]: (label: string, fields: [string, string][]) =>
      (output[label] ?? []).map((e) => Object.fromEntries(fields.map(([alias, field]) => [alias, (e as Record<string, unknown>)[field] ?? null]))),
  };
  for (const name of transform.params) bindings[transform.rewritten.names.param(name)] = input.params[name];
  return () => expression.evaluate(output, bindings);
}

async function concurrentMs(fn: () => Promise<unknown>, total: number): Promise<number> {
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await fn();
    }),
  );
  return (performance.now() - start) / total;
}

async function compare(label: string, transform: CompiledTransform, input: TransformInput, n: number, pool: TransformPool): Promise<void> {
  const baseline = plain(transform, input);
  const project = () => pool.evaluate(transform, input);
  const expected = JSON.stringify(await baseline());
  if (JSON.stringify(await project()) !== expected) throw new Error(`${label}: the two paths disagree`);
  const b = await timeRuns(baseline, n);
  const p = await timeRuns(project, n);
  console.log(summary(`${label}: plain jsonata`, b));
  console.log(summary(`${label}: project path`, p));
  console.log(`${label}: sequential p50 ratio ${(percentile(p, 50) / percentile(b, 50)).toFixed(2)}x`);
  const bc = await concurrentMs(baseline, n);
  const pc = await concurrentMs(project, n);
  console.log(`${label}: ${concurrency} in flight, ms per evaluation: plain ${bc.toFixed(3)}, project ${pc.toFixed(3)}, ratio ${(pc / bc).toFixed(2)}x`);
}

async function main(): Promise<void> {
  const pool = new TransformPool({ timeoutMs: 60_000 });
  try {
    const example = compile(EXAMPLE_DEFINITION.transform!);
    const exampleInput: TransformInput = { queryOutput: { accessPoint: accessPoints(2) }, params: { publicId: "AGR-1", tenantId: "bench" } };
    console.log(`transform pool: ${pool.stats().processes || "starting"} processes; plain jsonata in this process`);
    await compare("spec example (2 entities)", example, exampleInput, runs, pool);
    await compare(`heavy (${entities} entities)`, compile(HEAVY), { queryOutput: { ap: accessPoints(entities) }, params: {} }, heavyRuns, pool);
  } finally {
    await pool.close();
  }
}

await main();
