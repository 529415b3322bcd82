/**
 * A nested calculation run after run, with the compiled cache against the same service without it
 * (capacity 0: every run checks and compiles each level again), in the same run of the benchmark.
 * Three levels: a model of `--steps` steps over a selected item at the bottom, two expressions above.
 *
 *   npm run build && node dist/bench/calculation-cache.js [--runs=200] [--steps=300] [--database-url=memory]
 */
import { randomUUID } from "node:crypto";
import { Calculations } from "../src/calculation/service.js";
import { openDatabase } from "../src/db/database.js";
import { upsertEntities } from "../src/graph/entities.js";
import { createLinks } from "../src/graph/links.js";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { TimeSeries } from "../src/timeseries/service.js";
import { option, percentile, summary, timeRuns } from "./harness.js";

const runs = Number(option("runs", "200"));
const stepCount = Number(option("steps", "300"));
const url = option("database-url", "memory");
const RANGE = { period: "Custom range" as const, from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };
const HOURLY = { aggregation: { metric: "avg" as const, interval: "Hourly" as const } };
const LIMITS = { timeoutMs: 60_000, query: { timeoutMs: 5000, maxRows: 10_000 }, steps: { maxSteps: 1000, expression: { maxLength: 1000, maxDepth: 50 } } };

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl: url === "memory" ? undefined : url, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-calc-${randomUUID()}`;
  try {
    const [, item] = await upsertEntities(db.knex, tenant, [{ type: "Site", key: "S" }, { type: "Item", key: "m" }]);
    await createLinks(db.knex, tenant, [{ from: { type: "Site", key: "S" }, relation: "meter", to: { id: item!.id } }]);
    await ingestEvents(db.knex, tenant, Array.from({ length: 96 }, (_, i) => ({ itemId: item!.id, timestamp: new Date(Date.parse(RANGE.from) + i * 900_000).toISOString(), value: i % 7 })));
    const reader = new TimeSeries(db.knex, "UTC");
    const cached = new Calculations(db.knex, db.graph, reader, LIMITS);
    const uncached = new Calculations(db.knex, db.graph, reader, LIMITS, 0);
    const steps = Array.from({ length: stepCount }, (_, i) => ({ name: `s${i}`, expression: i === 0 ? "a * 0.5" : `s${i - 1} + a * 0.5 - ${i % 3}` }));
    await cached.create(tenant, {
      externalId: "model",
      calculationType: "CALCULATION",
      data: { calculation: { select: 'Site ?site; entity:key "S"; link:meter Item:?m.', steps, output: `s${stepCount - 1}`, eventDateRange: RANGE, queryOptions: HOURLY, scope: { a: { timeseries: { selectVariable: "{{?m}}" } } } } },
    });
    for (const [id, below] of [["middle", "model"], ["top", "middle"]]) {
      await cached.create(tenant, { externalId: id!, calculationType: "EXPRESSION", data: { calculation: { expression: "x * 2", eventDateRange: RANGE, queryOptions: HOURLY, scope: { x: { type: "EXPRESSION", expression: below! } } } } });
    }
    const same = JSON.stringify(await cached.calculate(tenant, "top", {})) === JSON.stringify(await uncached.calculate(tenant, "top", {}));
    if (!same) throw new Error("the cached and uncached runs disagree");
    // Interleaved rounds, so both see the same machine.
    const withCache: number[] = [];
    const without: number[] = [];
    for (let round = 0; round < 5; round++) {
      without.push(...(await timeRuns(() => uncached.calculate(tenant, "top", {}), runs / 5, 2)));
      withCache.push(...(await timeRuns(() => cached.calculate(tenant, "top", {}), runs / 5, 2)));
    }
    withCache.sort((a, b) => a - b);
    without.sort((a, b) => a - b);
    console.log(`${db.kind}, 3 levels, a ${stepCount}-step model at the bottom, ${runs} runs each`);
    console.log(summary("compiled every run (no cache)", without));
    console.log(summary("compiled cache", withCache));
    console.log(`ratio p50: ${(percentile(withCache, 50) / percentile(without, 50)).toFixed(2)}× the time; compilations: cached ${cached.compilations}, uncached ${uncached.compilations}`);
  } finally {
    await db.knex("calculation_definitions").where({ tenant }).del();
    await db.knex("events").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
