/**
 * Time-series speed, each against a baseline in the same run:
 *  1. aggregating 10 million events of one item into 15-minute and Daily Europe/Brussels buckets,
 *     next to the hand-written SQL GROUP BY of the same result (target: within 1.3×);
 *  2. bulk ingest (the service's checked, batched path) next to PostgreSQL COPY of the same rows,
 *     COPY timed before and after the service in the same run.
 *
 * The COPY baseline is the fastest a client would write: `COPY … FROM STDIN (FORMAT binary)`, the
 * rows encoded into 64 KiB buffers (a few hundred rows per write, not one write per row). The timed
 * region starts from the same row objects the service is given (ISO timestamp, value, source id)
 * and includes what any client must do per row: turn the timestamp into PostgreSQL's microseconds
 * since 2000 and write each field; only what is the same for every row of an upload (the tenant's
 * bytes, the item's 16 bytes) is encoded once, as the service does. Binary was chosen over text
 * with pre-formatted rows (which would leave the client's per-row work out of the time) and over
 * chunked text: measured on 300,000 rows, binary cost the client ~160 ms of CPU and the backend
 * ~1,060 ms, text in 64 KiB chunks ~105 ms and ~1,320 ms (the server parses every timestamp and
 * number), the former one-write-per-row CSV ~800 ms and ~1,400 ms.
 *
 *   npm run build && node dist/bench/timeseries.js [--events=10000000] [--ingest=500000] [--runs=3]
 */
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import { openDatabase } from "../src/db/database.js";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { TimeSeries } from "../src/timeseries/service.js";
import { binaryCopy, type IngestRow } from "./binary-copy.js";
import { option } from "./harness.js";

const eventCount = Number(option("events", "10000000"));
const ingestCount = Number(option("ingest", "500000"));
const runs = Number(option("runs", "3"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const ZONE = "Europe/Brussels";
const START = Date.UTC(2023, 0, 1);
const STEP_MS = 3000;

async function best(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return Math.min(...times);
}

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-ts-${randomUUID()}`;
  const item = randomUUID();
  try {
    await db.knex("entities").insert({ tenant, id: item, type: "Item", key: "bench", attributes: JSON.stringify({ itemAction: "INGEST" }) });
    let t = performance.now();
    await db.knex.raw(
      `insert into events (tenant, item_id, ts, value)
       select ?, ?::uuid, to_timestamp(? / 1000.0) + g * interval '3 seconds', (g % 1000) / 10.0 from generate_series(0, ? - 1) g`,
      [tenant, item, START, eventCount],
    );
    await db.knex.raw("analyze events");
    console.log(`seeded ${eventCount.toLocaleString("en")} events in ${((performance.now() - t) / 1000).toFixed(1)} s`);

    const from = new Date(START).toISOString();
    const to = new Date(START + eventCount * STEP_MS).toISOString();
    const series = new TimeSeries(db.knex, ZONE);
    const ours = (interval: string) =>
      series.series(tenant, [item], { eventDateRange: { period: "Custom range", from, to, timeZone: ZONE }, queryOptions: { aggregation: { metric: "avg", interval: interval as never } } });

    const origin = (await ours("15 minute")).get(item) as { buckets: { timestamp: string }[] };
    const handWritten: Record<string, string> = {
      "15 minute": `select date_bin('15 minutes', ts, ?::timestamptz) as b, avg(value) from events
                    where tenant = ? and item_id = ? and ts >= ? and ts < ? group by 1 order by 1`,
      Daily: `select date_trunc('day', ts, '${ZONE}') as b, avg(value) from events
              where tenant = ? and item_id = ? and ts >= ? and ts < ? group by 1 order by 1`,
    };
    for (const interval of ["15 minute", "Daily"]) {
      const bindings = interval === "Daily" ? [tenant, item, from, to] : [origin.buckets[0]!.timestamp, tenant, item, from, to];
      const check = (await db.knex.raw(handWritten[interval]!, bindings)) as { rows: { avg: number }[] };
      const mine = (await ours(interval)).get(item) as { buckets: { value: number | null }[] };
      const filled = mine.buckets.filter((b) => b.value !== null);
      if (filled.length !== check.rows.length || Math.abs(filled[5]!.value! - Number(check.rows[5]!.avg)) > 1e-9) throw new Error(`${interval}: results differ`);
      const baseline = await best(() => db.knex.raw(handWritten[interval]!, bindings));
      const service = await best(() => ours(interval));
      console.log(
        `aggregate ${eventCount.toLocaleString("en")} events, ${interval.padEnd(9)}: hand-written GROUP BY ${baseline.toFixed(0)} ms, service ${service.toFixed(0)} ms, ratio ${(service / baseline).toFixed(2)}x (${mine.buckets.length} buckets)`,
      );
    }

    // Ingest: the same rows through the service and through COPY, each into a tenant of its own.
    // COPY runs before and after the service (the table, its index and the WAL grow between them,
    // and a checkpoint may fall in either): the ratio is taken against the mean of the two.
    const rows: IngestRow[] = Array.from({ length: ingestCount }, (_, i) => ({ timestamp: new Date(START + i * 1000).toISOString(), value: i % 977, sourceId: "bench" }));
    const copyRows = async (copyTenant: string): Promise<number> => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      const started = performance.now();
      await pipeline(Readable.from(binaryCopy(copyTenant, item, rows)), client.query(copyFrom("COPY events (tenant, item_id, ts, source_id, value) FROM STDIN WITH (FORMAT binary)")));
      const ms = performance.now() - started;
      await client.end();
      return ms;
    };
    const ingestTenant = `${tenant}-ingest`;
    const copyTenants = [`${tenant}-copy-before`, `${tenant}-copy-after`];
    const copyBeforeMs = await copyRows(copyTenants[0]!);
    await db.knex("entities").insert({ tenant: ingestTenant, id: item, type: "Item", key: "bench", attributes: "{}" });
    t = performance.now();
    const result = await ingestEvents(db.knex, ingestTenant, rows, { itemId: item });
    const serviceMs = performance.now() - t;
    if (result.stored !== ingestCount) throw new Error("ingest stored too few rows");
    const copyAfterMs = await copyRows(copyTenants[1]!);
    const copyMs = (copyBeforeMs + copyAfterMs) / 2;
    // The binary rows are the service's rows: same count, instants and values in every tenant.
    const written = (await db.knex.raw(
      `select tenant, count(*)::int || ' ' || min(ts) || ' ' || max(ts) || ' ' || sum(value) || ' ' || min(source_id) as digest
       from events where tenant in (?, ?, ?) group by tenant`,
      [ingestTenant, ...copyTenants],
    )) as { rows: { tenant: string; digest: string }[] };
    if (written.rows.length !== 3 || new Set(written.rows.map((r) => r.digest)).size !== 1) throw new Error(`COPY and the service wrote different rows: ${JSON.stringify(written.rows)}`);
    const rate = (ms: number) => Math.round(ingestCount / (ms / 1000)).toLocaleString("en");
    console.log(
      `ingest ${ingestCount.toLocaleString("en")} events: COPY before ${copyBeforeMs.toFixed(0)} ms, service ${rate(serviceMs)} events/s (${serviceMs.toFixed(0)} ms), COPY after ${copyAfterMs.toFixed(0)} ms; ` +
        `ratio ${(serviceMs / copyMs).toFixed(2)}x the mean time of COPY (${rate(copyMs)} events/s; ${(serviceMs / copyBeforeMs).toFixed(2)}x the one before, ${(serviceMs / copyAfterMs).toFixed(2)}x the one after)`,
    );
    await db.knex("events").whereIn("tenant", [ingestTenant, ...copyTenants]).del();
    await db.knex("entities").where({ tenant: ingestTenant }).del();
  } finally {
    await db.knex("events").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
