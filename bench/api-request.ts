/**
 * End-to-end request latency and throughput of `POST /task-backend/tasks/{segment}/api/request`
 * for the specification's example definition on a 140,002-entity graph, against the server
 * running as its own process on PostgreSQL, next to the raw SQL of the same walk in the same run.
 *
 *   npm run build && node dist/bench/api-request.js [--agreements=20000] [--requests=3000] [--concurrency=16]
 */
import { randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { openDatabase } from "../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../src/demo/seed.js";
import { freePort, startNode } from "../test/support/process.js";
import { option, percentile, summary, timeRuns, waitForHealth } from "./harness.js";
import { HAND_TUNED, seedGraph } from "./seed-graph.js";

const agreements = Number(option("agreements", "20000"));
const requests = Number(option("requests", "3000"));
const concurrency = Number(option("concurrency", "16"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-api-${randomUUID()}`;
  const port = await freePort();
  const server = startNode("dist/src/main.js", { DATABASE_URL: databaseUrl, JWT_SECRET: SECRET, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" });
  try {
    const count = await seedGraph(db.knex, tenant, agreements);
    await db.knex.raw("analyze entities");
    await db.knex.raw("analyze links");
    await server.waitFor(/listening|"level":"warn"/).catch(() => undefined);
    await waitForHealth(port);
    console.log(`postgres: ${count} entities, server pid ${server.child.pid}, ${concurrency} concurrent clients`);

    const key = new TextEncoder().encode(SECRET);
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("1h").sign(key);
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/api-definitions`, { method: "POST", headers, body: JSON.stringify(EXAMPLE_DEFINITION) });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);

    const publicId = (i: number) => `AGR-${(i * 7919) % agreements}`;
    const ask = async (i: number) => {
      const res = await fetch(`${base}/task-backend/tasks/bench/api/request`, {
        method: "POST",
        headers,
        body: JSON.stringify({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: publicId(i) } }),
      });
      const body = (await res.json()) as { accessPoints?: unknown[] };
      if (res.status !== 200 || body.accessPoints?.length !== 2) throw new Error(`request ${i}: ${res.status} ${JSON.stringify(body)}`);
    };

    const rawSql = await timeRuns(
      // The same pool the service's graph queries use: join_collapse_limit = 1 on its connections.
      (i) => db.graph.knex.raw(HAND_TUNED, [tenant, tenant, JSON.stringify({ publicId: publicId(i) })]),
      500,
    );
    const sequential = await timeRuns(ask, 500);

    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < requests) {
          const i = next++;
          const t = performance.now();
          await ask(i);
          latencies.push(performance.now() - t);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);

    console.log(summary("raw SQL of the walk (baseline)", rawSql));
    console.log(summary("request, one at a time", sequential));
    console.log(summary(`request, ${concurrency} concurrent`, latencies));
    console.log(`throughput under load: ${(requests / seconds).toFixed(0)} requests/s (${requests} requests in ${seconds.toFixed(1)} s)`);
    console.log(`ratio request / raw SQL at p50 (one at a time): ${(percentile(sequential, 50) / percentile(rawSql, 50)).toFixed(2)}x`);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    await db.knex("api_definitions").where({ tenant }).del();
    await db.knex("links").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
