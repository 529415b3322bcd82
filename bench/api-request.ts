/**
 * End-to-end request latency and throughput of `POST /task-backend/tasks/{segment}/api/request`
 * for the specification's example definition on a 140,002-entity graph, against the server
 * running as its own process on PostgreSQL, next to the raw SQL of the same walk in the same run:
 * one at a time (p50), and on as many concurrent clients (throughput). One-at-a-time and loaded
 * runs alternate between the two sides, so that a slower stretch of a shared machine falls on both.
 * The client is node:http with a keep-alive agent, lighter than fetch: on a 2-core machine the load
 * generator's own CPU is taken from the server and the database.
 *
 * The baseline is the walk as an expert would run it from Node with `pg`: the hand-ordered SQL
 * (seed-graph.ts) as a named prepared statement, parsed and planned once per connection, on a pool
 * of the size the server's graph pool has (DATABASE_POOL_SIZE) whose connections carry the graph
 * pool's own session settings (GRAPH_SESSION_SETTINGS: join_collapse_limit = 1,
 * plan_cache_mode = force_generic_plan, enable_seqscan = off, no parallel workers, no JIT) and its
 * statement_timeout (QUERY_TIMEOUT_MS). What the service adds on top — HTTP, authentication, the
 * definition's lookup and guard, the compiled walk's bookkeeping columns, JSON out — is the ratio.
 * Goal: p50 within 1.3× of the baseline one at a time, and at least 0.9× its throughput.
 *
 *   npm run build && node dist/bench/api-request.js [--agreements=20000] [--requests=3000] [--concurrency=16]
 *     [--graph-tenant=T]  (a tenant already seeded with `--agreements` agreements: kept, not seeded again)
 *     [--server-pool=N]  (the server's DATABASE_POOL_SIZE, and the baseline's pool; default: the service's default)
 *     [--server-cpu-prof=DIR]  (the server's CPU profile, written to DIR when it stops)
 *     [--database-url=postgres://…]
 */
import { randomUUID } from "node:crypto";
import { Agent } from "node:http";
import { SignJWT } from "jose";
import pg from "pg";
import { loadConfig } from "../src/config.js";
import { GRAPH_SESSION_SETTINGS, openDatabase } from "../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../src/demo/seed.js";
import { freePort, startNode } from "../test/support/process.js";
import { cpuBetween, cpuPerUnit, cpuSnapshot, option, percentile, post, summary, timeRuns, waitForHealth } from "./harness.js";
import { HAND_TUNED, handTunedBindings, seedGraph } from "./seed-graph.js";

const agreements = Number(option("agreements", "20000"));
const requests = Number(option("requests", "3000"));
const concurrency = Number(option("concurrency", "16"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
/** The server's DATABASE_POOL_SIZE; by default the service's own default. */
const serverPool = option("server-pool", "");
/** The walk with pg's numbered placeholders. */
const RAW_SQL = HAND_TUNED.replace(/\?/g, (_, at: number) => `$${HAND_TUNED.slice(0, at).split("?").length}`);
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";
/** The goals: the request's p50 at most this many times the baseline's, one at a time… */
const P50_GOAL = 1.3;
/** …and at least this share of the baseline's throughput under load. */
const THROUGHPUT_GOAL = 0.9;

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 4 });
  const kept = option("graph-tenant", "");
  const tenant = kept !== "" ? kept : `bench-api-${randomUUID()}`;
  const port = await freePort();
  // --server-cpu-prof=DIR: the server writes a V8 CPU profile there when it stops.
  const profileDir = option("server-cpu-prof", "");
  const serverEnv = {
    DATABASE_URL: databaseUrl,
    JWT_SECRET: SECRET,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    ...(serverPool !== "" ? { DATABASE_POOL_SIZE: serverPool } : {}),
  };
  // The server's own reading of its environment: the baseline's pool size and statement time-out.
  const serverConfig = loadConfig(serverEnv);
  const server = startNode("dist/src/main.js", {
    ...serverEnv,
    ...(profileDir !== "" ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profileDir}` } : {}),
  });
  // The baseline's pool: connections set up as the service's graph pool sets up its own.
  const rawPool = new pg.Pool({
    connectionString: databaseUrl,
    max: serverConfig.databasePoolSize,
    statement_timeout: serverConfig.queryTimeoutMs,
    options: GRAPH_SESSION_SETTINGS,
  });
  try {
    await db.knex("api_definitions").where({ tenant }).del();
    const count = kept !== "" ? Number((await db.knex("entities").where({ tenant }).count({ n: "*" }))[0]?.n) : await seedGraph(db.knex, tenant, agreements);
    if (kept === "") {
      // VACUUM as autovacuum would soon: besides the statistics, it empties the pending list of
      // the GIN attribute index, which every attribute lookup (both sides') otherwise scans in full
      // (~20 pages after the seed: twice the walk's CPU in PostgreSQL).
      await db.knex.raw("vacuum analyze entities");
      await db.knex.raw("vacuum analyze links");
    }
    await waitForHealth(port);
    console.log(
      `postgres: ${count} entities, server pid ${server.child.pid}, ${concurrency} concurrent clients; ` +
        `baseline: named prepared statement, pool of ${serverConfig.databasePoolSize}, "${GRAPH_SESSION_SETTINGS}", statement_timeout ${serverConfig.queryTimeoutMs} ms`,
    );

    const key = new TextEncoder().encode(SECRET);
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("1h").sign(key);
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/api-definitions`, { method: "POST", headers, body: JSON.stringify(EXAMPLE_DEFINITION) });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);

    const publicId = (i: number) => `AGR-${(i * 7919) % agreements}`;
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    const ask = async (i: number) => {
      const body = JSON.stringify({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: publicId(i) } });
      const { status, text } = await post(agent, port, "/task-backend/tasks/bench/api/request", headers, body);
      const answer = JSON.parse(text) as { accessPoints?: unknown[] };
      if (status !== 200 || answer.accessPoints?.length !== 2) throw new Error(`request ${i}: ${status} ${text}`);
    };
    const raw = async (i: number) => {
      // A named statement: pg prepares it once per connection, then only binds and executes it.
      const { rows } = await rawPool.query({ name: "bench-walk", text: RAW_SQL, values: handTunedBindings(tenant, publicId(i)) });
      if (rows.length !== 2) throw new Error(`raw SQL ${i}: ${rows.length} rows`);
    };

    // Alternated, so that a slower stretch of a shared machine falls on both.
    const rawSql: number[] = [];
    const sequential: number[] = [];
    for (let round = 0; round < 5; round++) {
      rawSql.push(...(await timeRuns(raw, 100)));
      sequential.push(...(await timeRuns(ask, 100)));
    }
    rawSql.sort((a, b) => a - b);
    sequential.sort((a, b) => a - b);

    // Loaded runs alternated A B B A, half the requests each, for the same reason; where the CPU
    // of each went, by process: on 2 cores it decides the throughput.
    const loaded = { raw: { fn: raw, runs: [] as Load[], cpu: new Map<string, number>() }, ask: { fn: ask, runs: [] as Load[], cpu: new Map<string, number>() } };
    for (const side of ["raw", "ask", "ask", "raw"] as const) {
      const before = cpuSnapshot();
      loaded[side].runs.push(await underLoad(loaded[side].fn, Math.ceil(requests / 2), concurrency));
      for (const [group, ms] of cpuBetween(before, cpuSnapshot())) loaded[side].cpu.set(group, (loaded[side].cpu.get(group) ?? 0) + ms);
    }
    const rawLoad = combine(loaded.raw.runs);
    const load = combine(loaded.ask.runs);
    const byCpu = (m: Map<string, number>) => new Map([...m].sort((a, b) => b[1] - a[1]));
    const rawCpu = cpuPerUnit(byCpu(loaded.raw.cpu), rawLoad.latencies.length, "query");
    const loadCpu = cpuPerUnit(byCpu(loaded.ask.cpu), load.latencies.length, "request");

    console.log(summary("raw SQL, prepared (baseline)", rawSql));
    console.log(summary("request, one at a time", sequential));
    console.log(summary(`raw SQL, ${concurrency} concurrent`, rawLoad.latencies));
    console.log(summary(`request, ${concurrency} concurrent`, load.latencies));
    console.log(`throughput, raw SQL, ${concurrency} concurrent on ${serverConfig.databasePoolSize} connections: ${rawLoad.perSecond.toFixed(0)} queries/s`);
    console.log(`throughput, ${concurrency} concurrent clients: ${load.perSecond.toFixed(0)} requests/s (${load.latencies.length} requests; server DATABASE_POOL_SIZE ${serverPool === "" ? "default" : serverPool})`);
    console.log(`CPU, raw SQL: ${rawCpu}`);
    console.log(`CPU, requests: ${loadCpu}`);
    const p50Ratio = percentile(sequential, 50) / percentile(rawSql, 50);
    const throughputRatio = load.perSecond / rawLoad.perSecond;
    const met = (ok: boolean) => (ok ? "met" : "NOT met");
    console.log(`ratio request / raw SQL at p50 (one at a time): ${p50Ratio.toFixed(2)}x (goal <= ${P50_GOAL}x: ${met(p50Ratio <= P50_GOAL)})`);
    console.log(`ratio throughput request / raw SQL (${concurrency} concurrent): ${throughputRatio.toFixed(2)}x (goal >= ${THROUGHPUT_GOAL}x: ${met(throughputRatio >= THROUGHPUT_GOAL)})`);
    agent.destroy();
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    await rawPool.end();
    await db.knex("api_definitions").where({ tenant }).del();
    if (kept === "") {
      await db.knex("links").where({ tenant }).del();
      await db.knex("entities").where({ tenant }).del();
    }
    await db.close();
  }
}

interface Load {
  latencies: number[];
  seconds: number;
  perSecond: number;
}

/** Loaded runs of one side as one: latencies merged (sorted), runs per second over their summed time. */
function combine(runs: Load[]): Load {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  return { latencies, seconds, perSecond: latencies.length / seconds };
}

/** Runs `fn` `total` times from `concurrency` loops at once: latencies (sorted) and runs per second. */
async function underLoad(fn: (i: number) => Promise<void>, total: number, concurrency: number): Promise<Load> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        await fn(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { latencies: latencies.sort((a, b) => a - b), seconds, perSecond: total / seconds };
}


main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
