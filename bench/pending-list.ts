/**
 * The attribute index's pending list (migration 015): bulk entity upserts, then attribute lookups
 * right after them, with `gin_pending_list_limit` at 64 kB (the migration's) and at 4 MB
 * (PostgreSQL's default, the baseline), in the same run and process, alternating which goes first.
 * Every lookup reads the whole pending list, so the list's bound is the lookups' cost after a bulk
 * write; merging it more often is the writes' cost.
 *
 *   npm run build && node dist/bench/pending-list.js [--backend=postgres,embedded] [--batches=30]
 *     [--batch=1000] [--rounds=3] [--probes=200] [--limits=64,4096] [--database-url=postgres://postgres@127.0.0.1:5432/bench_pending]
 *
 * Each round and setting: the list emptied (`gin_clean_pending_list`), `--batches` upserts of
 * `--batch` devices into a fresh tenant through `upsertEntities` (the service's write), timed; then
 * `--probes` lookups of a device by its owner through the tenant-scoped index, as a graph walk's
 * value join makes them, timed. The index is left at 64 kB. On the embedded database the background
 * ANALYZE (src/db/statistics.ts) empties the list too when the writes pass its threshold: what the
 * service does there.
 */
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { openDatabase } from "../src/db/database.js";
import { upsertEntities } from "../src/graph/entities.js";
import { ensureDatabase, option, percentile } from "./harness.js";

const batches = Number(option("batches", "30"));
const batchSize = Number(option("batch", "1000"));
const rounds = Number(option("rounds", "3"));
const probes = Number(option("probes", "200"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/bench_pending");
/** The limits compared, in kB: the migration's first, the baseline (PostgreSQL's default) last. */
const SETTINGS = option("limits", "64,4096").split(",").map(Number);

/** One round of one setting: the upserts' total ms and the lookups' p50 ms. */
async function round(knex: Knex, limitKb: number): Promise<{ write: number; probe: number }> {
  await knex.raw(`alter index entities_scoped_attributes set (gin_pending_list_limit = ${limitKb})`);
  await knex.raw("select gin_clean_pending_list('entities_scoped_attributes'::regclass)");
  const tenant = `bench-pending-${randomUUID()}`;
  let write = 0;
  for (let b = 0; b < batches; b++) {
    const batch = Array.from({ length: batchSize }, (_, i) => ({
      type: "Device",
      key: `D-${b}-${i}`,
      attributes: { owner: `P-${(b * batchSize + i) % 2000}`, model: `M${i % 40}`, status: "ok", labels: [`l${i % 13}`, `k${b}`] },
    }));
    const started = performance.now();
    await upsertEntities(knex, tenant, batch);
    write += performance.now() - started;
  }
  const times: number[] = [];
  for (let p = 0; p < probes; p++) {
    const started = performance.now();
    await knex.raw(
      "select id from entities where graph_scoped_attributes(tenant, type, attributes) @> graph_scoped_attributes(?::text, 'Device'::text, ?::jsonb)",
      [tenant, JSON.stringify({ owner: `P-${(p * 7) % 2000}` })],
    );
    times.push(performance.now() - started);
  }
  await knex("entities").where({ tenant }).del();
  return { write, probe: percentile(times.sort((a, b) => a - b), 50) };
}

async function main(): Promise<void> {
  for (const backend of option("backend", "postgres,embedded").split(",")) {
    if (backend === "postgres") await ensureDatabase(databaseUrl);
    const db = await openDatabase({ databaseUrl: backend === "postgres" ? databaseUrl : undefined, dataDir: "memory://", poolSize: 2 });
    try {
      const results = new Map<number, { write: number[]; probe: number[] }>(SETTINGS.map((s) => [s, { write: [], probe: [] }]));
      for (let r = 0; r < rounds; r++) {
        for (const limit of r % 2 === 0 ? SETTINGS : [...SETTINGS].reverse()) {
          const { write, probe } = await round(db.knex, limit);
          results.get(limit)!.write.push(write);
          results.get(limit)!.probe.push(probe);
          console.log(`${backend} round ${r + 1}, pending list ${String(limit).padStart(4)} kB: ${batches} upserts of ${batchSize} in ${write.toFixed(0)} ms, lookup p50 ${probe.toFixed(3)} ms`);
        }
      }
      await db.knex.raw("alter index entities_scoped_attributes set (gin_pending_list_limit = 64)");
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const [small, large] = [results.get(SETTINGS[0]!)!, results.get(SETTINGS[SETTINGS.length - 1]!)!];
      console.log(
        `${backend}, medians of ${rounds} rounds: upserts ${median(small.write).toFixed(0)} ms at ${SETTINGS[0]} kB against ${median(large.write).toFixed(0)} ms at ${SETTINGS[SETTINGS.length - 1]} kB ` +
          `(${(median(small.write) / median(large.write)).toFixed(2)}x the time); lookups right after them ${median(small.probe).toFixed(3)} ms against ` +
          `${median(large.probe).toFixed(3)} ms (${(median(large.probe) / median(small.probe)).toFixed(1)}x faster)`,
      );
    } finally {
      await db.close();
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
