/**
 * The specification's example query, compiled by the service, against the same walk written by
 * hand in SQL, on a graph of at least 100,000 entities. Prints both latencies and their ratio.
 *
 *   npm run build && node dist/bench/graph-query.js [--agreements=20000] [--backend=postgres|embedded] [--iterations=300]
 */
import { randomUUID } from "node:crypto";
import { openDatabase } from "../src/db/database.js";
import { EXAMPLE_QUERY } from "../src/demo/seed.js";
import { compileQuery } from "../src/graph/query/compiler.js";
import { executeQuery } from "../src/graph/query/execute.js";
import { parseQuery } from "../src/graph/query/parser.js";
import { option, percentile, summary, timeRuns } from "./harness.js";
import { HAND_TUNED, handTunedBindings, seedGraph } from "./seed-graph.js";

const agreements = Number(option("agreements", "20000"));
const backend = option("backend", "postgres");
const iterations = Number(option("iterations", "300"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");

const HAND_WRITTEN = `
select ap.id, ap.type, ap.key, ap.attributes
from entities t
join links l1 on l1.tenant = t.tenant and l1.from_id = t.id and l1.relation = 'hasIndexSet'
join entities s on s.tenant = t.tenant and s.id = l1.to_id and s.type = 'IndexSet'
join links l2 on l2.tenant = t.tenant and l2.to_id = s.id and l2.relation = 'inIndexSet'
join entities a on a.tenant = t.tenant and a.id = l2.from_id and a.type = 'Agreement'
join links l3 on l3.tenant = t.tenant and l3.from_id = a.id and l3.relation = 'hasProduct'
join entities p on p.tenant = t.tenant and p.id = l3.to_id and p.type = 'AgreementProduct'
join links l4 on l4.tenant = t.tenant and l4.from_id = p.id and l4.relation = 'hasArrangement'
join entities r on r.tenant = t.tenant and r.id = l4.to_id and r.type = 'Arrangement'
join links l5 on l5.tenant = t.tenant and l5.from_id = r.id and l5.relation = 'hasAccessPointRelation'
join entities rel on rel.tenant = t.tenant and rel.id = l5.to_id and rel.type = 'AccessPointRelation'
join links l6 on l6.tenant = t.tenant and l6.from_id = rel.id and l6.relation = 'accessPoint'
join entities ap on ap.tenant = t.tenant and ap.id = l6.to_id and ap.type = 'AccessPoint'
where t.tenant = ? and t.type = 'Tenant' and t.key = ? and a.attributes @> ?::jsonb
order by ap.key`;

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl: backend === "postgres" ? databaseUrl : undefined, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-graph-${randomUUID()}`;
  try {
    const started = performance.now();
    const entityCount = await seedGraph(db.knex, tenant, agreements);
    await db.knex.raw("analyze entities");
    await db.knex.raw("analyze links");
    console.log(`${backend}: seeded ${entityCount} entities (${agreements} agreements) in ${((performance.now() - started) / 1000).toFixed(1)} s`);

    const compiled = compileQuery(parseQuery(EXAMPLE_QUERY));
    const publicId = (i: number) => `AGR-${(i * 7919) % agreements}`;
    const limits = { timeoutMs: 5000, maxRows: 10_000 };
    // Both must find the same access points before anything is timed.
    for (const i of [0, 1, 2]) {
      const ours = await executeQuery(db.graph, compiled, tenant, { tenantId: tenant, publicId: publicId(i) }, limits);
      const theirs = (await db.knex.raw(HAND_WRITTEN, [tenant, tenant, JSON.stringify({ publicId: publicId(i) })])) as { rows: { key: string }[] };
      const a = (ours.accessPoint as { key: string }[]).map((e) => e.key).join(",");
      const b = theirs.rows.map((r) => r.key).join(",");
      const tuned = (await db.knex.raw(HAND_TUNED, handTunedBindings(tenant, publicId(i)))) as { rows: { key: string }[] };
      const c = tuned.rows.map((r) => r.key).join(",");
      if (a !== b || a !== c || a === "") throw new Error(`results differ for ${publicId(i)}: ${a} vs ${b} vs ${c}`);
    }
    const handTimes = await timeRuns((i) => db.knex.raw(HAND_WRITTEN, [tenant, tenant, JSON.stringify({ publicId: publicId(i) })]), iterations);
    // The tuned baseline runs as the service's queries do: join_collapse_limit = 1, its order kept.
    const tunedRun = (i: number) =>
      db.graph.presetTimeoutMs !== undefined
        ? db.graph.knex.raw(HAND_TUNED, handTunedBindings(tenant, publicId(i)))
        : db.knex.transaction(async (trx) => {
            await trx.raw("select set_config('join_collapse_limit', '1', true)");
            return trx.raw(HAND_TUNED, handTunedBindings(tenant, publicId(i)));
          });
    const tunedTimes = await timeRuns(tunedRun, iterations);
    const oursTimes = await timeRuns((i) => executeQuery(db.graph, compiled, tenant, { tenantId: tenant, publicId: publicId(i) }, limits), iterations);
    const compileTimes = await timeRuns(async () => compileQuery(parseQuery(EXAMPLE_QUERY)), iterations);
    console.log(summary("hand-written SQL, walk order", handTimes));
    console.log(summary("hand-written SQL, tuned + pinned", tunedTimes));
    console.log(summary("compiled graph query", oursTimes));
    console.log(summary("parse + compile (once)", compileTimes));
    console.log(`ratio compiled / hand-written (walk order) at p50: ${(percentile(oursTimes, 50) / percentile(handTimes, 50)).toFixed(2)}x`);
    console.log(`ratio compiled / hand-written (tuned + pinned) at p50: ${(percentile(oursTimes, 50) / percentile(tunedTimes, 50)).toFixed(2)}x`);
  } finally {
    await db.knex("links").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
