/**
 * api-request tasks through Camunda 7 (a real engine) and Zeebe (the project's gateway stand-in,
 * test/support/zeebe-gateway.ts: the vendor's broker may not be used): tasks per second of the
 * service's worker (the example definition, PostgreSQL) next to a worker that completes the same
 * tasks doing nothing, in the same run, on a warm engine, alternated (see {@link compared}).
 * Tasks are created first; the clock runs from the worker's start to the last completion. Zeebe also measures the service's worker with job
 * streaming (ZEEBE_STREAM_JOBS) against it polling, in the same run: the backlog (jobs created
 * first), live (jobs created while the worker runs: the jobs streaming pushes) and the
 * round trip of one job at a time (create to completion: its activation latency included).
 *
 *   npm run build && npx node dist/bench/workers.js [--tasks=2000] [--engines=camunda7,zeebe] [--latency-runs=100] [--warm-up=2] [--pin=apart]
 */
import { Client, Variables } from "camunda-external-task-client-js";
import { camunda7Settings, loadConfig, zeebeSettings } from "../src/config.js";
import { openDatabase } from "../src/db/database.js";
import { EXAMPLE_DEFINITION, exampleGraph } from "../src/demo/seed.js";
import { upsertEntities } from "../src/graph/entities.js";
import { createLinks } from "../src/graph/links.js";
import { Writable } from "node:stream";
import winston from "winston";
import { createLogger, type Logger } from "../src/logger.js";
import { Metrics } from "../src/metrics.js";
import { createServices } from "../src/services.js";
import { Camunda7Engine } from "../test/support/camunda7.js";
import { ZeebeGateway } from "../test/support/zeebe-gateway.js";
import { startCamunda7Worker } from "../workers/camunda7/worker.js";
import { startZeebeWorker, zeebeClient } from "../workers/zeebe/worker.js";
import { cpuBetween, cpuPerUnit, cpuSnapshot, option, percentile, pinApart, timeRuns } from "./harness.js";

const tasks = Number(option("tasks", "2000"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const tenant = `bench-workers-${Date.now()}`;
const engines = option("engines", "camunda7,zeebe").split(",");
const latencyRuns = Number(option("latency-runs", "100"));
const warmUp = Number(option("warm-up", "2"));
/**
 * `--pin=apart`: the engine (its JVM and database backends) on CPU 0, the workers (this process and
 * the service's database backends) on CPU 1 — as an engine and a worker on hosts of their own. By
 * default all share both cores, and the service's CPU per task is taken from the engine's.
 */
const pinned = option("pin", "shared") === "apart";
const workerDatabase = new URL(databaseUrl).pathname.slice(1);
const apart = (engineDatabase?: string) => (pinned ? pinApart({ engineDatabase, workerDatabase, engineCpu: 0, workerCpu: 1 }) : () => {});

async function until(done: () => Promise<boolean> | boolean, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what} did not finish in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rate = (ms: number) => `${(tasks / (ms / 1000)).toFixed(0)} tasks/s (${(ms / 1000).toFixed(1)} s)`;

/**
 * The service's worker against the do-nothing one on a warm engine: the engine's JVM keeps getting
 * faster over its first thousands of tasks (Camunda 7's Java CPU per task: 13.7, 8.6, 9.0, 7.0,
 * 5.7 ms in five rounds of 1,000), so `--warm-up` rounds of each worker come first, not counted;
 * then the two alternate in the order A B B A, so that what drift is left, of the engine or the
 * machine, falls on both alike. Each time is the mean of its two rounds.
 */
async function compared<W>(engine: string, round: (start: W) => Promise<number>, doNothing: W, service: W): Promise<{ noop: number; ours: number }> {
  for (let i = 0; i < warmUp; i++) {
    console.log(`${engine}: warm-up rounds ${i + 1} of ${warmUp} (do-nothing worker, service worker; not counted)`);
    await round(doNothing);
    await round(service);
  }
  const times = { noop: [] as number[], ours: [] as number[] };
  for (const which of ["noop", "ours", "ours", "noop"] as const) {
    const ms = await round(which === "noop" ? doNothing : service);
    console.log(`${engine}: ${which === "noop" ? "do-nothing" : "service"} worker ${rate(ms)}`);
    times[which].push(ms);
  }
  const mean = (list: number[]) => list.reduce((a, b) => a + b, 0) / list.length;
  return { noop: mean(times.noop), ours: mean(times.ours) };
}

async function main(): Promise<void> {
  console.log(pinned ? "engine on CPU 0, workers on CPU 1 (--pin=apart)" : "engine and workers sharing every core");
  const config = loadConfig({ JWT_SECRET: "bench-secret-that-is-at-least-32-bytes-long", DATABASE_URL: databaseUrl });
  const db = await openDatabase({ databaseUrl, dataDir: "memory://", poolSize: 10 });
  const services = createServices(config, db);
  const { entities, links } = exampleGraph(tenant, [{ publicId: "AGR-1", accessPoints: [["EAN-1", "GAS"], ["EAN-2", "WATER"]] }]);
  await upsertEntities(db.knex, tenant, entities);
  await createLinks(db.knex, tenant, links);
  await services.apiDefinitions.create(tenant, EXAMPLE_DEFINITION);
  const variables = { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } };

  if (engines.includes("camunda7")) await camunda7(services, db.knex, variables);
  if (engines.includes("zeebe")) await zeebe(services, db.knex, variables);
  await db.knex("api_definitions").where({ tenant }).del();
  await db.knex("links").where({ tenant }).del();
  await db.knex("entities").where({ tenant }).del();
  await db.close();
}

type Knex = Parameters<typeof startZeebeWorker>[2]["database"];
type Services = ReturnType<typeof createServices>;
const silent = createLogger("silent");

/**
 * A logger that keeps the task lines' times (`runMs`: taking and running the task, `reportMs`: the
 * engine taking the report, `durationMs`: all of it, the row settled too), for a round of its own
 * after the compared ones: where a service task's time goes, without the log's cost in the ratio.
 */
function stageLogger(): { logger: Logger; summary(): string } {
  const lines: { runMs: number; reportMs: number; durationMs: number }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = JSON.parse(chunk.toString()) as { message?: string; runMs: number; reportMs: number; durationMs: number };
      if (line.message === "task") lines.push(line);
      done();
    },
  });
  const logger = createLogger("info", [new winston.transports.Stream({ stream: sink })]);
  const p50 = (field: "runMs" | "reportMs" | "durationMs") => {
    const sorted = lines.map((l) => l[field]).sort((a, b) => a - b);
    return `${field} p50 ${percentile(sorted, 50)} p90 ${percentile(sorted, 90)}`;
  };
  return { logger, summary: () => `${lines.length} task lines: ${p50("runMs")}, ${p50("reportMs")}, ${p50("durationMs")}` };
}

async function camunda7(services: Services, knex: Knex, variables: Record<string, unknown>): Promise<void> {
  const db = { knex };
  const c7 = await Camunda7Engine.start();
  const unpin = apart(c7.database);
  try {
    await c7.deploy("bpmn/camunda7/api-request-example.bpmn");
    const completed = async () => (await c7.call<{ count: number }>("GET", "/history/process-instance/count?processDefinitionKey=api-request-example&finished=true")).count;
    const round = async (startWorker: () => () => Promise<void>) => {
      const before = await completed();
      for (let i = 0; i < tasks; i += 50) await Promise.all(Array.from({ length: Math.min(50, tasks - i) }, () => c7.startInstance("api-request-example", variables)));
      const cpu = cpuSnapshot();
      const started = performance.now();
      const stop = startWorker();
      await until(async () => (await completed()) - before >= tasks, "camunda 7 round");
      const ms = performance.now() - started;
      console.log(`  ${cpuPerUnit(cpuBetween(cpu, cpuSnapshot()), tasks, "task")}`);
      await stop();
      return ms;
    };
    const doNothing = () => {
      // The same client settings as the service's worker: 10 in hand, long polling, 20 ms between fetches.
      const client = new Client({ baseUrl: c7.baseUrl, maxTasks: 10, maxParallelExecutions: 10, asyncResponseTimeout: 1000, interval: 20, use: () => {} });
      client.subscribe("api-request", { lockDuration: 30_000 }, async ({ task, taskService }) => {
        await taskService.complete(task, new Variables().set("result", { accessPoints: [] }));
      });
      return async () => client.stop();
    };
    const service = (logger: Logger) => () => {
      const worker = startCamunda7Worker(services, camunda7Settings(c7.baseUrl, { maxTasks: 10, asyncResponseTimeoutMs: 1000 }), { database: db.knex, logger, metrics: new Metrics() });
      return () => worker.stop();
    };
    const { noop, ours } = await compared("camunda 7", round, doNothing, service(silent));
    console.log(`camunda 7, ${tasks} api-request tasks per round: do-nothing worker ${rate(noop)}; service worker ${rate(ours)}; ratio ${(ours / noop).toFixed(2)}x the time`);
    const stages = stageLogger();
    const logged = await round(service(stages.logger));
    console.log(`camunda 7, service worker logging its task lines: ${rate(logged)}; ${stages.summary()}`);
  } finally {
    unpin();
    await c7.stop();
  }
}

async function zeebe(services: Services, knex: Knex, variables: Record<string, unknown>): Promise<void> {
  const db = { knex };
  const zb = await ZeebeGateway.start();
  const createJobs = () => {
    for (let i = 0; i < tasks; i++) zb.createJob({ type: "api-request", bpmnProcessId: "api-request-example-zeebe", elementId: "RequestAccessPoints", variables });
  };
  const unpin = apart();
  try {
    const round = async (startWorker: (count: () => void) => () => Promise<void>) => {
      let done = 0;
      createJobs();
      const cpu = cpuSnapshot();
      const started = performance.now();
      const stop = startWorker(() => done++);
      await until(() => done >= tasks, "zeebe round");
      const ms = performance.now() - started;
      console.log(`  ${cpuPerUnit(cpuBetween(cpu, cpuSnapshot()), tasks, "task")}`);
      await stop();
      return ms;
    };
    const doNothing = (count: () => void) => {
      const c8 = zeebeClient({ address: zb.address });
      const worker = c8.createWorker({
        taskType: "api-request",
        maxJobsToActivate: 10,
        pollInterval: 20,
        loglevel: "NONE",
        taskHandler: async (job) => {
          const ack = await job.complete({ result: { accessPoints: [] } });
          count();
          return ack;
        },
      });
      return async () => {
        await worker.close();
        await c8.close();
      };
    };
    const service = (streamJobs: boolean, logger: Logger = silent) => (count: () => void) => {
      const metrics = new Metrics();
      // Only completed jobs count (a failure is retried and would be counted twice).
      const counting = {
        fetched: metrics.fetched.bind(metrics),
        finished: (...args: Parameters<Metrics["finished"]>) => {
          metrics.finished(...args);
          if (args[2] === "completed") count();
        },
      };
      const worker = startZeebeWorker(services, zeebeSettings(zb.address, { maxTasks: 10, streamJobs }), { database: db.knex, logger, metrics: counting });
      return () => worker.stop();
    };
    const { noop, ours } = await compared("zeebe", round, doNothing, service(false));
    console.log(`zeebe, ${tasks} api-request jobs per round: do-nothing worker ${rate(noop)}; service worker ${rate(ours)}; ratio ${(ours / noop).toFixed(2)}x the time`);
    const stages = stageLogger();
    const logged = await round(service(false, stages.logger));
    console.log(`zeebe, service worker logging its task lines: ${rate(logged)}; ${stages.summary()}`);
    const streamedBacklog = await round(service(true));
    console.log(`zeebe backlog, ${tasks} jobs created first: polling ${rate(ours)}; streaming ${rate(streamedBacklog)}; ratio ${(streamedBacklog / ours).toFixed(2)}x the time`);

    // Live: the worker runs (its stream open) before the jobs are created.
    const live = async (startWorker: (count: () => void) => () => Promise<void>) => {
      let done = 0;
      const stop = startWorker(() => done++);
      await new Promise((r) => setTimeout(r, 3000));
      const started = performance.now();
      // In batches of 50, yielding between them, as instances arriving over time.
      for (let i = 0; i < tasks; i += 50) {
        for (let j = i; j < Math.min(tasks, i + 50); j++) zb.createJob({ type: "api-request", variables });
        await new Promise((r) => setImmediate(r));
      }
      await until(() => done >= tasks, "zeebe live round");
      const ms = performance.now() - started;
      await stop();
      return ms;
    };
    const livePolling = await live(service(false));
    const liveStreaming = await live(service(true));
    console.log(`zeebe live, ${tasks} jobs created while the worker runs: polling ${rate(livePolling)}; streaming ${rate(liveStreaming)}; ratio ${(liveStreaming / livePolling).toFixed(2)}x the time`);

    // One job at a time, create to completion: the job's activation latency is part of each.
    const roundTrip = async (streamJobs: boolean) => {
      const stop = service(streamJobs)(() => {});
      await new Promise((r) => setTimeout(r, 3000));
      const times = await timeRuns(() => zb.settle(zb.createJob({ type: "api-request", variables })), latencyRuns, 10);
      await stop();
      return times;
    };
    const pollingTrips = await roundTrip(false);
    const streamingTrips = await roundTrip(true);
    const ms = (sorted: number[], p: number) => `${percentile(sorted, p).toFixed(1)} ms`;
    console.log(
      `zeebe round trip, ${latencyRuns} jobs one at a time: polling p50 ${ms(pollingTrips, 50)} p99 ${ms(pollingTrips, 99)}; ` +
        `streaming p50 ${ms(streamingTrips, 50)} p99 ${ms(streamingTrips, 99)}; ratio p50 ${(percentile(streamingTrips, 50) / percentile(pollingTrips, 50)).toFixed(2)}x`,
    );
  } finally {
    unpin();
    await zb.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
