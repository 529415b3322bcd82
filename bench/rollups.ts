/**
 * The events' rollups (issue 27, point 4), each figure next to its baseline in the same run:
 *  1. portfolio queries — one timeline over all the items (the aggregation SINGLEAGGREGATION runs),
 *     sum and avg over the year 2025, Daily and Monthly, in UTC and Europe/Brussels — through the
 *     service (rollups) next to the hand-written raw `GROUP BY` of the same answer (goal ≥ 30×,
 *     ≤ 50 ms p50); one item Hourly over a month likewise;
 *  2. the same portfolio queries on a tenant with twice the events per bucket (7.5-minute events)
 *     against one with 15-minute events, timed in turns (goal: within ±20 %);
 *  3. ingest through the service (ingestEvents, what `POST /events` runs: events plus the rollups'
 *     marks) next to `COPY … (FORMAT binary)` of the same rows, in rounds after a warm-up (goal ≥ 0.6×);
 *     then the time the background reconcile takes to roll those rows up;
 *  4. the embedded database: the portfolio queries against its raw GROUP BY, and its ingest.
 *
 *   npm run build && node dist/bench/rollups.js [--items=1000] [--runs=15] [--raw-runs=3] [--dense-items=100]
 *     [--ingest-items=100] [--ingest-days=31] [--ingest-runs=5] [--ingest-warmup=3] [--embedded-items=20] [--parts=portfolio,dense,ingest,embedded]
 *     [--rollup-build=reconcile|statement]
 *     [--database-url=postgres://postgres@127.0.0.1:5432/bench_rollups]
 *
 * The database of --database-url is made when missing; a tenant seeded by an earlier run with the
 * same item count is used again (seeding is SQL: generate_series, then the reconcile builds the rollups).
 */
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Knex } from "knex";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { openDatabase, type Database } from "../src/db/database.js";
import { DateTime } from "luxon";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { aggregateEvents } from "../src/timeseries/query.js";
import { drainMarks } from "../src/timeseries/rollup-store.js";
import { ensureZone } from "../src/timeseries/rollup-zones.js";
import { TimeSeries } from "../src/timeseries/service.js";
import { binaryCopy, type IngestRow } from "./binary-copy.js";
import { cpuBetween, cpuSnapshot, ensureDatabase, option, percentile, timeRuns, withLongestStall } from "./harness.js";

const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/bench_rollups");
const items = Number(option("items", "1000"));
const runs = Number(option("runs", "15"));
const rawRuns = Number(option("raw-runs", "3"));
const denseItems = Number(option("dense-items", "100"));
const ingestItems = Number(option("ingest-items", "100"));
const ingestDays = Number(option("ingest-days", "31"));
const ingestRuns = Number(option("ingest-runs", "5"));
/** Rounds of both sides before the measured ones: a running service's code is optimised and its heap grown (one round was not enough, see bench/RESULTS.md). */
const ingestWarmup = Number(option("ingest-warmup", "3"));
const embeddedItems = Number(option("embedded-items", "20"));
const parts = option("parts", "portfolio,dense,ingest,embedded").split(",");
/** How the seed builds the rollups: the reconcile (what the service runs), or one set-based statement per level (the same rows, faster). */
const rollupBuild = option("rollup-build", "reconcile");
const ZONES = ["UTC", "Europe/Brussels"];

/** A tenant of `n` items × the year 2025 of events every `stepMinutes`, its rollups built; made once, reused. */
async function seed(knex: Knex, tenant: string, n: number, stepMinutes: number): Promise<string[]> {
  const existing = (await knex("entities").where({ tenant }).orderBy("key").select("id")) as { id: string }[];
  const perItem = (365 * 24 * 60) / stepMinutes;
  const stored = existing.length === n ? Number((await knex.raw("select count(*) as n from events where tenant = ?", [tenant])).rows[0].n) : 0;
  if (existing.length === n && stored === n * perItem && !(await knex("rollup_dirty").where({ tenant }).first())) return existing.map((e) => e.id);
  await knex("events").where({ tenant }).del();
  for (const table of ["entities", "rollup_cells", "rollup_periods", "rollup_day_packs", "rollup_dirty", "rollup_zones"]) await knex(table).where({ tenant }).del();
  const ids = Array.from({ length: n }, () => randomUUID());
  await knex("entities").insert(ids.map((id, k) => ({ tenant, id, type: "Item", key: `m${String(k).padStart(5, "0")}`, attributes: JSON.stringify({ itemAction: "INGEST" }) })));
  await knex.raw("select events_month_partition(m) from generate_series(timestamp '2025-01-01', timestamp '2026-01-01', interval '1 month') m");
  let t = performance.now();
  for (let k = 0; k < n; k += 50) {
    await knex.raw(
      `insert into events (tenant, item_id, ts, value)
       select ?, i.id, g, ((extract(epoch from g)::bigint / 60 + i.k) % 1000) / 8.0
       from unnest(?::uuid[]) with ordinality as i(id, k), generate_series(timestamptz '2025-01-01T00:00:00Z', timestamptz '2025-12-31T23:59:59Z', ?::interval) g`,
      [tenant, ids.slice(k, k + 50), `${stepMinutes} minutes`],
    );
  }
  const seeded = performance.now() - t;
  t = performance.now();
  if (rollupBuild === "statement") for (let k = 0; k < n; k += 50) await buildCells(knex, tenant, ids.slice(k, k + 50));
  else {
    await knex.raw(
      "insert into rollup_dirty (tenant, item_id, day) select ?, i.id, d::date from unnest(?::uuid[]) i(id), generate_series(date '2025-01-01', date '2025-12-31', interval '1 day') d",
      [tenant, ids],
    );
    await drainMarks(knex);
  }
  // The local days and months of the zones asked, built as a tenant's first query of each zone
  // would; then the statistics and visibility map of a table that autovacuum has visited.
  const zoneTimes: string[] = [];
  for (const zone of ZONES) {
    const started = performance.now();
    const { stallMs } = await withLongestStall(() => ensureZone(knex, tenant, zone));
    zoneTimes.push(`${zone} ${(performance.now() - started).toFixed(0)} ms (event loop stalled at most ${stallMs.toFixed(0)} ms)`);
  }
  const built = performance.now() - t;
  await knex.raw("vacuum analyze events, rollup_cells, rollup_periods, rollup_day_packs, rollup_dirty");
  const events = n * perItem;
  console.log(
    `seeded ${tenant}: ${events.toLocaleString("en")} events in ${(seeded / 1000).toFixed(0)} s; rollups built by ${rollupBuild === "statement" ? "one statement" : "the reconcile"} in ${(built / 1000).toFixed(0)} s (${Math.round(events / (built / 1000)).toLocaleString("en")} events/s); the zones' first builds: ${zoneTimes.join(", ")}`,
  );
  return ids;
}

/**
 * The items' 15-minute cells from their events in one statement: the rows the reconcile's rebuild
 * makes (rollup-store.ts), for a bench whose reconcile would take hours. The local days and months
 * are then built by the first query of each zone (ensureZone), and every portfolio query is checked
 * equal to the raw GROUP BY before it is timed.
 */
async function buildCells(knex: Knex, tenant: string, ids: string[]): Promise<void> {
  const max = "1.7976931348623157e308";
  await knex.raw(
    `insert into rollup_cells (tenant, item_id, cell, n, sum, min, max, open_ts, open_source, open, close_ts, close_source, close)
     select e.tenant, e.item_id, date_bin('15 minutes', e.ts, timestamptz '2000-01-01T00:00:00Z') as cell, count(*),
       case when sum(e.value::numeric) > ${max} then 'Infinity'::float8 when sum(e.value::numeric) < -${max} then '-Infinity'::float8 else sum(e.value::numeric)::float8 end,
       min(e.value), max(e.value),
       min(e.ts), (array_agg(e.source_id order by e.ts, e.source_id))[1], (array_agg(e.value order by e.ts, e.source_id))[1],
       max(e.ts), (array_agg(e.source_id order by e.ts desc, e.source_id desc))[1], (array_agg(e.value order by e.ts desc, e.source_id desc))[1]
     from events e where e.tenant = ? and e.item_id = any(?::uuid[]) group by e.tenant, e.item_id, cell`,
    [tenant, ids],
  );
}

const yearRange = (zone: string) => ({ period: "Custom range" as const, from: zone === "UTC" ? "2025-01-01T00:00:00Z" : "2025-01-01T00:00:00+01:00", to: zone === "UTC" ? "2026-01-01T00:00:00Z" : "2026-01-01T00:00:00+01:00", timeZone: zone });

/** The hand-written raw GROUP BY of one timeline over the items. */
function rawGroupBy(knex: Knex, tenant: string, ids: string[], metric: string, unit: string, zone: string, from: string, to: string) {
  return knex.raw(`select date_trunc(?, ts, ?) as b, ${metric}(value) as v from events where tenant = ? and item_id = any(?::uuid[]) and ts >= ? and ts < ? group by 1 order by 1`, [
    unit,
    zone,
    tenant,
    ids,
    from,
    to,
  ]) as Promise<{ rows: { b: Date; v: number }[] }>;
}

/** Portfolio queries: p50 of the service and of the raw GROUP BY, checked equal. */
async function portfolio(db: Database, tenant: string, ids: string[], label: string, serviceRuns: number, baselineRuns: number): Promise<Map<string, number>> {
  const series = new TimeSeries(db.knex, "UTC", undefined, undefined, undefined, ZONES);
  const times = new Map<string, number>();
  for (const zone of ZONES) {
    const range = yearRange(zone);
    for (const interval of ["Daily", "Monthly"] as const) {
      for (const metric of ["sum", "avg"] as const) {
        const ask = () => series.singleTimeline(tenant, ids, { eventDateRange: range, queryOptions: { aggregation: { metric, interval } } });
        const raw = () => rawGroupBy(db.knex, tenant, ids, metric, interval === "Daily" ? "day" : "month", zone, new Date(range.from).toISOString(), new Date(range.to).toISOString());
        const [mine, theirs] = [await ask(), (await raw()).rows];
        const filled = mine.filter((b) => b.value !== null);
        if (filled.length !== theirs.length || filled.some((b, i) => Math.abs(b.value! - Number(theirs[i]!.v)) > 1e-9 * Math.abs(Number(theirs[i]!.v)) * (metric === "sum" ? 1 : 100) + 1e-9)) {
          throw new Error(`${label} ${metric} ${interval} ${zone}: the rollups' answer differs from the raw GROUP BY`);
        }
        const ours = percentile(await timeRuns(ask, serviceRuns, 2), 50);
        const base = percentile(await timeRuns(raw, baselineRuns, 0), 50);
        times.set(`${metric} ${interval} ${zone}`, ours);
        console.log(`${label} ${metric.padEnd(3)} ${interval.padEnd(7)} ${zone.padEnd(15)}: rollups ${ours.toFixed(1).padStart(7)} ms, raw GROUP BY ${base.toFixed(0).padStart(6)} ms: ${(base / ours).toFixed(1)}x faster`);
      }
    }
  }
  // One item, Hourly, over July.
  for (const zone of ZONES) {
    const from = zone === "UTC" ? "2025-07-01T00:00:00Z" : "2025-07-01T00:00:00+02:00";
    const to = zone === "UTC" ? "2025-08-01T00:00:00Z" : "2025-08-01T00:00:00+02:00";
    const ask = () => series.series(tenant, [ids[0]!], { eventDateRange: { period: "Custom range", from, to, timeZone: zone }, queryOptions: { aggregation: { metric: "sum", interval: "Hourly" } } });
    const raw = () => rawGroupBy(db.knex, tenant, [ids[0]!], "sum", "hour", zone, new Date(from).toISOString(), new Date(to).toISOString());
    // Queries of a few ms on a shared machine: the two taken in turns, so that a change of load weighs on both.
    const [mine, theirs] = await alternately(ask, raw, serviceRuns * 2);
    const [ours, base] = [percentile(mine, 50), percentile(theirs, 50)];
    console.log(`${label} one item sum Hourly July ${zone.padEnd(15)}: rollups ${ours.toFixed(1).padStart(7)} ms, raw GROUP BY ${base.toFixed(1).padStart(6)} ms: ${(base / ours).toFixed(2)}x`);
  }
  return times;
}

/**
 * A portfolio's Daily sum and avg read from the days' packs (migration 014) and from the day rows,
 * timed in turns: the two layouts under the same load.
 */
async function dailyLayouts(db: Database, tenant: string, ids: string[], label: string, serviceRuns: number): Promise<void> {
  for (const zone of ZONES) {
    const { from, to } = yearRange(zone);
    const range = { from: DateTime.fromISO(from, { zone }), to: DateTime.fromISO(to, { zone }), zone };
    for (const metric of ["sum", "avg"] as const) {
      const ask = (dayRows: boolean) => () =>
        aggregateEvents(db.knex, tenant, { kind: "single", itemIds: ids }, range, { aggregation: { metric, interval: "Daily" } }, { zones: ZONES, dayRows });
      const [packs, rows] = await alternately(ask(false), ask(true), serviceRuns * 2);
      const [a, b] = [percentile(packs, 50), percentile(rows, 50)];
      console.log(`${label} ${metric} Daily ${zone.padEnd(15)}: day packs ${a.toFixed(1).padStart(6)} ms, day rows ${b.toFixed(1).padStart(6)} ms (in turns): ${(b / a).toFixed(1)}x faster`);
    }
  }
}

/** Times `a` and `b` in turns, `runs` times each after two warm-up rounds; the sorted times of each. */
async function alternately(a: () => Promise<unknown>, b: () => Promise<unknown>, runs: number): Promise<[number[], number[]]> {
  const times: [number[], number[]] = [[], []];
  for (let i = -2; i < runs; i++) {
    for (const [k, fn] of [a, b].entries()) {
      const started = performance.now();
      await fn();
      if (i >= 0) times[k]!.push(performance.now() - started);
    }
  }
  return [times[0].sort((x, y) => x - y), times[1].sort((x, y) => x - y)];
}

/**
 * Ingest through the service vs COPY of the same rows, in `--ingest-runs` rounds after
 * `--ingest-warmup` rounds of warm-up (this process's code optimised and its heap grown, as in a
 * service that has been running): each round COPYs
 * the rows into a fresh tenant and ingests them into another, COPY first in odd rounds and second in
 * even ones, its ratio measured within the round, with the CPU each side took (this process and the
 * database's backends: the ratio the machine's other load does not set). Then the reconcile of
 * what the service wrote.
 */
async function ingest(db: Database): Promise<void> {
  const run = randomUUID().slice(0, 8);
  const ids = Array.from({ length: ingestItems }, () => randomUUID());
  const start = Date.UTC(2026, 0, 1);
  // A portfolio's feed: every item's reading of each quarter hour, time after time.
  const rows: IngestRow[] = [];
  for (let q = 0; q < ingestDays * 96; q++) for (let k = 0; k < ingestItems; k++) rows.push({ itemId: ids[k], timestamp: new Date(start + q * 900_000).toISOString(), value: (q * 7 + k) % 1000 / 8, sourceId: "" });
  const backends = `postgres ${new URL(databaseUrl).pathname.slice(1)}`;
  /** Wall and CPU ms of `work`. */
  const measured = async (work: () => Promise<void>) => {
    const cpu = cpuSnapshot();
    const t = performance.now();
    await work();
    const ms = performance.now() - t;
    const spent = cpuBetween(cpu, cpuSnapshot());
    return { ms, cpu: (spent.get("this process") ?? 0) + (spent.get(backends) ?? 0) };
  };
  const copy = async (tenant: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const m = await measured(() => pipeline(Readable.from(binaryCopy(tenant, ids[0]!, rows)), client.query(copyFrom("COPY events (tenant, item_id, ts, source_id, value) FROM STDIN WITH (FORMAT binary)"))));
    await client.end();
    return m;
  };
  const service = async (tenant: string) => {
    await db.knex("entities").insert(ids.map((id, k) => ({ tenant, id, type: "Item", key: `i${k}`, attributes: "{}" })));
    return measured(async () => {
      if ((await ingestEvents(db.knex, tenant, rows)).stored !== rows.length) throw new Error("the service stored too few rows");
    });
  };
  await db.knex.raw("select events_month_partition(m) from generate_series(timestamp '2026-01-01', timestamp '2026-03-01', interval '1 month') m");
  const tenants: string[] = [];
  const serviceTenants: string[] = [];
  const round = async (k: number) => {
    const [c, s] = [`bench-ingest-${run}-${k}-copy`, `bench-ingest-${run}-${k}`];
    tenants.push(c, s);
    serviceTenants.push(s);
    if (Math.abs(k) % 2 === 1) {
      const copied = await copy(c);
      return { copied, served: await service(s) };
    }
    const served = await service(s);
    return { copied: await copy(c), served };
  };
  const line = (label: string, { copied, served }: Awaited<ReturnType<typeof round>>) =>
    `${label}: COPY ${copied.ms.toFixed(0)} ms (CPU ${copied.cpu} ms), service ${served.ms.toFixed(0)} ms (CPU ${served.cpu} ms): ${(copied.ms / served.ms).toFixed(2)}x the throughput of COPY (CPU ${(copied.cpu / served.cpu).toFixed(2)}x)`;
  console.log(`ingest ${rows.length.toLocaleString("en")} events (${ingestItems} items × ${ingestDays} days)`);
  for (let k = 1; k <= ingestWarmup; k++) console.log(`  ${line(`warm-up round ${k}`, await round(-k))}`);
  const rounds: Awaited<ReturnType<typeof round>>[] = [];
  for (let k = 1; k <= ingestRuns; k++) {
    rounds.push(await round(k));
    console.log(`  ${line(`round ${k}`, rounds[k - 1]!)}`);
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const rate = (ms: number) => Math.round(rows.length / (ms / 1000)).toLocaleString("en");
  const serviceMs = median(rounds.map((r) => r.served.ms));
  const marks = Number((await db.knex("rollup_dirty").whereIn("tenant", serviceTenants).count("* as n"))[0]!.n);
  const t = performance.now();
  await drainMarks(db.knex);
  const reconcile = performance.now() - t;
  const reconciled = rows.length * serviceTenants.length;
  console.log(
    `ingest, median of ${ingestRuns} rounds: ${median(rounds.map((r) => r.copied.ms / r.served.ms)).toFixed(2)}x the throughput of COPY (COPY ${median(rounds.map((r) => r.copied.ms)).toFixed(0)} ms, ` +
      `service ${serviceMs.toFixed(0)} ms, ${rate(serviceMs)} events/s); the background reconcile of the ${serviceTenants.length} uploads' ${marks} marks then took ${reconcile.toFixed(0)} ms ` +
      `(${Math.round(reconciled / (reconcile / 1000)).toLocaleString("en")} events/s)`,
  );
  for (const table of ["events", "entities", "rollup_cells", "rollup_periods", "rollup_day_packs", "rollup_dirty", "rollup_zones"]) await db.knex(table).whereIn("tenant", tenants).del();
}

async function embedded(): Promise<void> {
  const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
  try {
    const ids = await seed(db.knex, "bench-embedded", embeddedItems, 15);
    // The baseline of the zones' first builds above (in steps of at most ~50 ms there): a third zone in one statement a step.
    const started = performance.now();
    const { stallMs } = await withLongestStall(() => ensureZone(db.knex, "bench-embedded", "Asia/Kolkata", Number.POSITIVE_INFINITY));
    console.log(`embedded: a zone built in one statement a step (the baseline): ${(performance.now() - started).toFixed(0)} ms, the event loop stalled ${stallMs.toFixed(0)} ms`);
    await portfolio(db, "bench-embedded", ids, `embedded ${embeddedItems} items`, Math.max(3, Math.floor(runs / 3)), rawRuns);
    const rows = Array.from({ length: 96 * 31 }, (_, q) => ({ itemId: ids[q % ids.length], timestamp: new Date(Date.UTC(2026, 0, 1) + q * 900_000).toISOString(), value: q }));
    const t = performance.now();
    await ingestEvents(db.knex, "bench-embedded", rows);
    const ms = performance.now() - t;
    const r = performance.now();
    await drainMarks(db.knex);
    console.log(`embedded ingest ${rows.length} events: ${Math.round(rows.length / (ms / 1000))} events/s; reconcile ${(performance.now() - r).toFixed(0)} ms`);
  } finally {
    await db.close();
  }
}

async function main(): Promise<void> {
  await ensureDatabase(databaseUrl);
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 4, timeouts: { statementMs: 3_600_000, idleInTransactionMs: 3_600_000 } });
  try {
    if (parts.includes("portfolio")) {
      const ids = await seed(db.knex, `bench-${items}`, items, 15);
      await portfolio(db, `bench-${items}`, ids, `${items} items`, runs, rawRuns);
      await dailyLayouts(db, `bench-${items}`, ids, `${items} items`, runs);
    }
    if (parts.includes("dense")) await doubled(db);
    if (parts.includes("ingest")) await ingest(db);
  } finally {
    await db.close();
  }
  if (embeddedItems > 0 && parts.includes("embedded")) await embedded();
}

/** The portfolio queries with 15-minute and with 7.5-minute events: twice the events per bucket. */
async function doubled(db: Database): Promise<void> {
  {
    const sparse = await seed(db.knex, `bench-dense-${denseItems}-15`, denseItems, 15);
    const dense = await seed(db.knex, `bench-dense-${denseItems}-7.5`, denseItems, 7.5);
    // Each tenant's queries checked against its raw GROUP BY and timed; then, for the doubling, the
    // same query on the two tenants timed in turns, so that a change of load weighs on both alike.
    await portfolio(db, `bench-dense-${denseItems}-15`, sparse, `${denseItems} items, 15-min events`, runs, 1);
    await portfolio(db, `bench-dense-${denseItems}-7.5`, dense, `${denseItems} items, 7.5-min events`, runs, 1);
    const series = new TimeSeries(db.knex, "UTC", undefined, undefined, undefined, ZONES);
    for (const zone of ZONES) {
      for (const interval of ["Daily", "Monthly"] as const) {
        for (const metric of ["sum", "avg"] as const) {
          const request = { eventDateRange: yearRange(zone), queryOptions: { aggregation: { metric, interval } } };
          const [a, b] = await alternately(
            () => series.singleTimeline(`bench-dense-${denseItems}-15`, sparse, request),
            () => series.singleTimeline(`bench-dense-${denseItems}-7.5`, dense, request),
            runs * 2,
          );
          const [before, after] = [percentile(a, 50), percentile(b, 50)];
          console.log(`events per bucket doubled, ${metric} ${interval} ${zone}: ${before.toFixed(1)} -> ${after.toFixed(1)} ms (${((after / before - 1) * 100).toFixed(0)} %)`);
        }
      }
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
