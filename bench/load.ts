/**
 * Sustained load on the server running as its own process on PostgreSQL, over loopback, bounded
 * in connections and time: first `POST /task-backend/tasks/{segment}/api/request` (the
 * specification's example definition on a seeded graph), then `POST /events` (batches of events
 * for several items). For each phase it prints throughput, latency p50/p99, every answer that
 * was not 2xx, and the server's resident memory sampled through the run. Baselines from the same
 * run: the first minute's throughput and the memory after warm-up; the ratios are the last
 * minute's throughput against the first, and the memory at the end against after warm-up. After
 * the ingest phase every acknowledged event is counted in the database: nothing may be missing.
 *
 *   npm run build && node dist/bench/load.js [--seconds=180] [--connections=16] [--agreements=2000] [--batch=100]
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import { SignJWT } from "jose";
import { openDatabase } from "../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../src/demo/seed.js";
import { freePort, startNode } from "../test/support/process.js";
import { option, waitForHealth } from "./harness.js";
import { seedGraph } from "./seed-graph.js";

const seconds = Number(option("seconds", "180"));
const connections = Number(option("connections", "16"));
const agreements = Number(option("agreements", "2000"));
const batch = Number(option("batch", "100"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";
const ITEMS = 20;
const WARM_UP_SECONDS = Math.min(30, Math.floor(seconds / 6));
const WINDOW_SECONDS = Math.min(60, Math.floor(seconds / 3));

/** Resident memory of a process now, in MiB (VmRSS). */
function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.replace(/\D+/g, "")) / 1024;
}

/** The server's V8 heap in use, in MiB, from its own /metrics. */
async function heapUsedMiB(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("nodejs_heap_size_used_bytes "));
  return line === undefined ? NaN : Number(line.split(" ")[1]) / 2 ** 20;
}

interface Phase {
  name: string;
  path: string;
  /** The body of the n-th request. */
  body: (n: number) => string;
  /** How many units (requests, events) one request carries. */
  unitsPerRequest: number;
  unit: string;
}

interface PhaseResult {
  ok: number;
  problems: Map<number, number>;
  errors: number;
}

async function runPhase(base: string, headers: Record<string, string>, pid: number, phase: Phase): Promise<PhaseResult> {
  let n = 0;
  const perSecond: number[] = [];
  const memory: { at: number; rss: number; heap: number }[] = [];
  const started = Date.now();
  const sample = async () => memory.push({ at: (Date.now() - started) / 1000, rss: rssMiB(pid), heap: await heapUsedMiB(base) });
  const sampler = setInterval(() => void sample(), 5_000);
  const problems = new Map<number, number>();
  let finished!: (result: autocannon.Result) => void;
  const done = new Promise<autocannon.Result>((resolve) => (finished = resolve));
  const instance = autocannon(
    {
    url: base,
    connections,
    duration: seconds,
    requests: [
      {
        method: "POST",
        path: phase.path,
        headers,
        setupRequest: (request) => ({ ...request, body: phase.body(n++) }),
      },
    ],
    },
    (err, result) => {
      if (err !== null && err !== undefined) throw err;
      finished(result);
    },
  );
  instance.on("response", (_client: unknown, status: number) => {
    if (status < 200 || status > 299) problems.set(status, (problems.get(status) ?? 0) + 1);
    else {
      const second = Math.floor((Date.now() - started) / 1000);
      perSecond[second] = (perSecond[second] ?? 0) + 1;
    }
  });
  const rssStart = rssMiB(pid);
  const result = await done;
  clearInterval(sampler);
  await sample();

  const rate = (from: number, to: number) => {
    const slice = perSecond.slice(from, to);
    return (slice.reduce((a, b) => a + b, 0) / slice.length) * phase.unitsPerRequest;
  };
  const first = rate(0, WINDOW_SECONDS);
  const last = rate(perSecond.length - 1 - WINDOW_SECONDS, perSecond.length - 1); // the last second is cut short
  const warm = memory.find((m) => m.at >= WARM_UP_SECONDS) ?? memory[0]!;
  const end = memory[memory.length - 1]!;
  const peak = Math.max(...memory.map((m) => m.rss));
  const ok = result["2xx"];
  console.log(`\n== ${phase.name}: ${connections} connections, ${seconds} s`);
  console.log(`answers: ${ok} 2xx, ${result.non2xx} other (${[...problems].map(([s, c]) => `${s}: ${c}`).join(", ") || "none"}), ${result.errors} socket errors, ${result.timeouts} time-outs`);
  console.log(`throughput: ${((ok * phase.unitsPerRequest) / result.duration).toFixed(0)} ${phase.unit}/s; latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
  console.log(`throughput held: last ${WINDOW_SECONDS} s ${last.toFixed(0)} vs first ${WINDOW_SECONDS} s ${first.toFixed(0)} ${phase.unit}/s (baseline) = ${(last / first).toFixed(2)}x`);
  console.log(
    `server RSS: at start ${rssStart.toFixed(0)} MiB, after ${WARM_UP_SECONDS} s warm-up ${warm.rss.toFixed(0)} MiB (baseline), peak ${peak.toFixed(0)} MiB, ` +
      `end ${end.rss.toFixed(0)} MiB = ${(end.rss / warm.rss).toFixed(2)}x`,
  );
  console.log(`RSS every 5 s (MiB): ${memory.map((m) => m.rss.toFixed(0)).join(" ")}`);
  console.log(`V8 heap used every 5 s (MiB): ${memory.map((m) => m.heap.toFixed(0)).join(" ")}`);
  return { ok, problems, errors: result.errors + result.timeouts };
}

async function main(): Promise<void> {
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 4 });
  const tenant = `bench-load-${randomUUID()}`;
  const port = await freePort();
  const server = startNode("dist/src/main.js", { DATABASE_URL: databaseUrl, JWT_SECRET: SECRET, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" });
  let failed: boolean;
  try {
    await seedGraph(db.knex, tenant, agreements);
    await db.knex.raw("analyze entities");
    await db.knex.raw("analyze links");
    await waitForHealth(port);
    const pid = server.child.pid!;
    const key = new TextEncoder().encode(SECRET);
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("2h").sign(key);
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/api-definitions`, { method: "POST", headers, body: JSON.stringify(EXAMPLE_DEFINITION) });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${await created.text()}`);
    const items = await fetch(`${base}/graph/entities`, {
      method: "POST",
      headers,
      body: JSON.stringify({ entities: Array.from({ length: ITEMS }, (_, i) => ({ type: "Item", key: `load-${i}`, attributes: { itemAction: "INGEST" } })) }),
    });
    const itemIds = ((await items.json()) as { entities: { id: string }[] }).entities.map((e) => e.id);
    console.log(`server pid ${pid}; ${agreements} agreements (${2 + agreements * 7} entities), ${ITEMS} items, Node ${process.version}`);

    const request = await runPhase(base, headers, pid, {
      name: "api/request (example definition)",
      path: "/task-backend/tasks/load/api/request",
      body: (n) => JSON.stringify({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: `AGR-${(n * 7919) % agreements}` } }),
      unitsPerRequest: 1,
      unit: "requests",
    });

    // Every request carries `batch` events at timestamps no other request uses: each acknowledged event is a new row.
    const start = Date.UTC(2020, 0, 1);
    const ingest = await runPhase(base, headers, pid, {
      name: `POST /events (${batch} events per request, ${ITEMS} items)`,
      path: "/events",
      body: (n) =>
        JSON.stringify({
          events: Array.from({ length: batch }, (_, i) => ({ itemId: itemIds[(n + i) % ITEMS], timestamp: new Date(start + (n * batch + i) * 1000).toISOString(), value: i })),
        }),
      unitsPerRequest: batch,
      unit: "events",
    });
    const { rows } = (await db.knex.raw("select count(*)::int as n from events where tenant = ?", [tenant])) as { rows: { n: number }[] };
    const acknowledged = ingest.ok * batch;
    console.log(`\nevents acknowledged ${acknowledged}, stored ${rows[0]!.n}: ${rows[0]!.n >= acknowledged ? "nothing lost" : `${acknowledged - rows[0]!.n} LOST`}`);
    failed = rows[0]!.n < acknowledged || request.errors + ingest.errors > 0 || [...request.problems.keys(), ...ingest.problems.keys()].some((s) => s >= 500);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    await db.knex("events").where({ tenant }).del();
    await db.knex("api_definitions").where({ tenant }).del();
    await db.knex("links").where({ tenant }).del();
    await db.knex("entities").where({ tenant }).del();
    await db.close();
  }
  if (failed) {
    console.error("load run FAILED: a 5xx, a socket error or a lost event (above)");
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
