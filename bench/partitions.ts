/**
 * The events table flat, or partitioned by month, week or day: ingest through the service (COPY on
 * PostgreSQL, arrays on the embedded database), the service's reads, and dropping a month, all
 * measured in the same run on the same rows (docs/decisions/2026-11-27-events-partitioned-by-month.md).
 *
 *   npm run build && node dist/bench/partitions.js [--items=20] [--embedded-items=5] [--runs=7] [--layouts=flat,month,week,day]
 *     [--backends=postgres,embedded]
 *
 * The layouts run in the order given, a layout given twice twice (the embedded database runs only
 * flat and month): run it with the order reversed too, since the first layout also warms the process up.
 *
 * PostgreSQL at TEST_DATABASE_URL (a schema per layout, dropped after); the embedded one in memory.
 */
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import knexFactory from "knex";
import { openDatabase, type Database } from "../src/db/database.js";
import { latestEvents } from "../src/timeseries/export.js";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { TimeSeries } from "../src/timeseries/service.js";
import { option, percentile, timeRuns } from "./harness.js";

type Layout = "flat" | "month" | "week" | "day";
const URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const runs = Number(option("runs", "7"));
const YEAR = Date.UTC(2025, 0, 1);
const STEP_MS = 15 * 60_000;
const PER_ITEM = 365 * 96;
const TENANT = "bench";

/** Replaces the migrated (monthly) events table by the layout's, empty. */
async function lay(knex: Knex, layout: Layout): Promise<void> {
  if (layout === "month") {
    await knex.raw("select events_month_partition(m::timestamp) from generate_series(timestamp '2025-01-01', timestamp '2026-01-01', interval '1 month') m");
    return;
  }
  await knex.raw("create table events_shape (like events including defaults)");
  await knex.raw("drop table events");
  const key = "primary key (tenant, item_id, ts, source_id)";
  if (layout === "flat") {
    await knex.raw(`create table events (like events_shape including defaults, ${key})`);
    return;
  }
  await knex.raw(`create table events (like events_shape including defaults, ${key}) partition by range (ts)`);
  await knex.raw("create table events_default partition of events default");
  const step = layout === "week" ? "7 days" : "1 day";
  const { rows } = (await knex.raw(`select to_char(s, 'YYYY-MM-DD') as lo, to_char(s + interval '${step}', 'YYYY-MM-DD') as hi
    from generate_series(timestamp '2024-12-30', timestamp '2026-01-01', interval '${step}') s`)) as { rows: { lo: string; hi: string }[] };
  for (const { lo, hi } of rows) await knex.raw(`create table events_p${lo.replace(/-/g, "")} partition of events for values from ('${lo} 00:00Z') to ('${hi} 00:00Z')`);
}

async function measure(db: Database, layout: Layout, items: number): Promise<Record<string, number>> {
  const knex = db.knex;
  await lay(knex, layout);
  const ids = Array.from({ length: items }, () => randomUUID());
  await knex("entities").insert(ids.map((id, k) => ({ tenant: TENANT, id, type: "Item", key: `m${k}`, attributes: "{}" })));
  const rows = (k: number) => Array.from({ length: PER_ITEM }, (_, i) => ({ timestamp: new Date(YEAR + i * STEP_MS).toISOString(), value: (i * 7 + k) % 101 }));
  let t = performance.now();
  for (let k = 0; k < items; k++) await ingestEvents(knex, TENANT, rows(k), { itemId: ids[k] });
  const loadMs = performance.now() - t;
  await knex.raw("analyze events");
  const series = new TimeSeries(knex, "UTC");
  const range = (from: string, to: string) => ({ period: "Custom range" as const, from, to, timeZone: "UTC" });
  const p50 = async (fn: () => Promise<unknown>) => percentile(await timeRuns(fn, runs, 2), 50);
  let day = 0;
  const result: Record<string, number> = {
    "ingest rows/s": Math.round((items * PER_ITEM) / (loadMs / 1000)),
    "1 item, July raw (1000) ms": await p50(() => series.series(TENANT, [ids[0]!], { eventDateRange: range("2025-07-01T00:00:00Z", "2025-08-01T00:00:00Z") })),
    "1 item, year Daily sum ms": await p50(() =>
      series.series(TENANT, [ids[0]!], { eventDateRange: range("2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"), queryOptions: { aggregation: { metric: "sum", interval: "Daily" } } }),
    ),
    "all items, year Monthly sum ms": await p50(() =>
      series.singleTimeline(TENANT, ids, { eventDateRange: range("2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"), queryOptions: { aggregation: { metric: "sum", interval: "Monthly" } } }),
    ),
    "latest event per item ms": await p50(() => latestEvents(knex, TENANT, ids)),
    // One more day of one item's events, appended (the service's usual upload).
    "append 96 events ms": await p50(() => {
      const start = Date.UTC(2025, 11, 1) + 60_000 * ++day;
      return ingestEvents(knex, TENANT, Array.from({ length: 96 }, (_, i) => ({ timestamp: new Date(start + i * STEP_MS).toISOString(), value: i })), { itemId: ids[1] });
    }),
  };
  t = performance.now();
  // Retention: a month is one table to drop only where a partition is a month.
  if (layout === "month") await knex.raw("drop table events_y2025m01");
  else await knex.raw("delete from events where ts < '2025-02-01T00:00:00Z'");
  result["remove January ms"] = performance.now() - t;
  return result;
}

async function onPostgres(layout: Layout, items: number): Promise<Record<string, number>> {
  const schema = `bench_${layout}_${randomUUID().replace(/-/g, "").slice(0, 8)}`;
  const admin = knexFactory({ client: "pg", connection: URL });
  await admin.raw(`create schema ${schema}`);
  const db = await openDatabase({ databaseUrl: URL, dataDir: "memory://", poolSize: 2, schema });
  try {
    return await measure(db, layout, items);
  } finally {
    await db.close();
    await admin.raw(`drop schema ${schema} cascade`);
    await admin.destroy();
  }
}

async function onEmbedded(layout: Layout, items: number): Promise<Record<string, number>> {
  const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
  try {
    return await measure(db, layout, items);
  } finally {
    await db.close();
  }
}

function table(title: string, results: [Layout, Record<string, number>][]): void {
  console.log(`\n${title}`);
  console.log(`| measure | ${results.map(([l]) => l).join(" | ")} |`);
  console.log(`| --- | ${results.map(() => "---:").join(" | ")} |`);
  for (const key of Object.keys(results[0]![1])) console.log(`| ${key} | ${results.map(([, r]) => (r[key]! >= 100 ? Math.round(r[key]!) : r[key]!.toFixed(1))).join(" | ")} |`);
}

async function main(): Promise<void> {
  const items = Number(option("items", "20"));
  const embeddedItems = Number(option("embedded-items", "5"));
  const layouts = option("layouts", "flat,month,week,day").split(",") as Layout[];
  const backends = option("backends", "postgres,embedded").split(",");
  if (backends.includes("postgres")) {
    const pg: [Layout, Record<string, number>][] = [];
    for (const layout of layouts) pg.push([layout, await onPostgres(layout, items)]);
    table(`PostgreSQL, ${items} items × one year of 15-minute events (${items * PER_ITEM} events), p50 of ${runs}`, pg);
  }
  if (backends.includes("embedded")) {
    const embedded: [Layout, Record<string, number>][] = [];
    for (const layout of layouts.filter((l) => l === "flat" || l === "month")) embedded.push([layout, await onEmbedded(layout, embeddedItems)]);
    table(`Embedded (PGlite), ${embeddedItems} items × one year (${embeddedItems * PER_ITEM} events), p50 of ${runs}`, embedded);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
