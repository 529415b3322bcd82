/**
 * Bulk ingest on the embedded database, which has no COPY from a client: the service's path (row
 * checks, batches of 5,000 as arrays, a plain INSERT when they append) next to the database
 * writing the same rows by itself (`INSERT … SELECT` from `generate_series`, no client at all) in
 * the same run — the floor any client path stands on.
 *
 *   npm run build && node dist/bench/ingest-embedded.js [--ingest=200000] [--runs=3]
 */
import { randomUUID } from "node:crypto";
import { openDatabase } from "../src/db/database.js";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { option } from "./harness.js";

const count = Number(option("ingest", "200000"));
const runs = Number(option("runs", "3"));
const START = Date.UTC(2020, 0, 1);

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
  const rows = Array.from({ length: count }, (_, i) => ({ timestamp: new Date(START + i * 1000).toISOString(), value: i % 977, sourceId: "bench" }));
  const rate = (ms: number) => Math.round(count / (ms / 1000));
  try {
    for (let run = 1; run <= runs; run++) {
      const item = randomUUID();
      const [service, floor] = [`bench-ingest-${randomUUID()}`, `bench-floor-${randomUUID()}`];
      await db.knex("entities").insert({ tenant: service, id: item, type: "Item", key: "bench", attributes: "{}" });
      let t = performance.now();
      const result = await ingestEvents(db.knex, service, rows, { itemId: item });
      const serviceMs = performance.now() - t;
      if (result.stored !== count) throw new Error("ingest stored too few rows");
      t = performance.now();
      await db.knex.raw(
        `insert into events (tenant, item_id, ts, source_id, value)
         select ?, ?::uuid, to_timestamp(? / 1000.0 + g), 'bench', g % 977 from generate_series(0, ? - 1) g`,
        [floor, item, START, count],
      );
      const floorMs = performance.now() - t;
      console.log(
        `run ${run}: ${count.toLocaleString("en")} events — service ${rate(serviceMs).toLocaleString("en")} events/s, ` +
          `the database alone ${rate(floorMs).toLocaleString("en")} events/s: ${(floorMs / serviceMs).toFixed(2)}x its throughput`,
      );
      await db.knex("events").whereIn("tenant", [service, floor]).del();
      await db.knex("entities").where({ tenant: service }).del();
    }
  } finally {
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
