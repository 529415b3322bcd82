/**
 * The Zeebe worker's own cost: `api-request` tasks per second for the example definition through
 * the Zeebe worker (`dist/src/worker.js`, its own process, on the project's gateway stand-in,
 * test/support/zeebe-gateway.ts, which runs in this process and costs almost nothing), next to the
 * same requests through `POST /task-backend/tasks/{segment}/api/request` (`dist/src/main.js`, its
 * own process) at the same concurrency (the worker's WORKER_MAX_TASKS), in the same run: the
 * processes started the same way, on the same database and tenant data, rounds alternated
 * REST, polling, streaming, streaming, polling, REST after warm-up rounds, CPU per task of each
 * process and of the database's backends read from /proc; the load average is printed with them.
 *
 * Two worker processes run all along, each on job types of its own: one long polling
 * (`ActivateJobs`), its round's jobs created at once as a backlog, the clock running from their
 * creation to the last completion; one with job streaming (`ZEEBE_STREAM_JOBS=true`, the gateway
 * pushes jobs, no activation round trip), its jobs fed by `concurrency` lanes that each create a
 * job and wait for it to end, as the REST client's lanes do with requests (a backlog created at
 * once would mostly be yielded to the fallback polls: a stream takes no more than its flow-control
 * window holds). Per job the worker has two database round trips the REST path has not — its
 * in-hand row taken and committed before the task runs (a task whose previous worker died with it
 * in hand is not run again), then the walk — besides the job coming in and its report going out;
 * the row's release is off the job's path (see src/tasks/in-hand.ts).
 *
 * Optional: `--worker-log` (the workers log their task lines, summarised after the rounds: runMs,
 * reportMs, durationMs p50/p90; a cost of its own), `--worker-cpu-prof=DIR` (a V8 CPU profile per
 * worker process), `--camunda7` (a smoke figure on a real engine, Camunda 7/Operaton: the
 * service's worker next to a do-nothing worker), `--streaming` (in this process: the SDK's
 * do-nothing worker, polling against streaming on a backlog, live and one at a time).
 *
 *   npx tsc -p . && node dist/bench/workers.js [--tasks=2000] [--concurrency=10] [--warm-up=1]
 *     [--database-url=postgres://…/bench_x] [--worker-log] [--worker-cpu-prof=DIR] [--camunda7]
 *     [--streaming] [--latency-runs=100] [--pin=apart]
 */
import { Agent } from "node:http";
import { loadavg } from "node:os";
import { Client, Variables } from "camunda-external-task-client-js";
import { SignJWT } from "jose";
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
import { freePort, startNode } from "../test/support/process.js";
import { ZeebeGateway } from "../test/support/zeebe-gateway.js";
import { startCamunda7Worker } from "../workers/camunda7/worker.js";
import { Camunda8 } from "@camunda8/sdk";
import { sdkConfiguration, startZeebeWorker } from "../workers/zeebe/worker.js";
import { cpuBetween, cpuPerUnit, cpuSnapshot, option, percentile, pinApart, timeRuns, post, waitForHealth, type CpuSnapshot } from "./harness.js";

const tasks = Number(option("tasks", "2000"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const tenant = `bench-workers-${Date.now()}`;
const concurrency = Number(option("concurrency", "10"));
const flag = (name: string) => process.argv.includes(`--${name}`);
/** `--worker-cpu-prof=DIR`: the worker process writes a V8 CPU profile there when it stops. */
const workerProfileDir = option("worker-cpu-prof", "");
const latencyRuns = Number(option("latency-runs", "100"));
const warmUp = Number(option("warm-up", "1"));
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

  await workerVersusRest(variables);
  if (flag("camunda7")) await camunda7(services, db.knex, variables);
  if (flag("streaming")) await zeebe(services, db.knex, variables);
  await db.knex("api_definitions").where({ tenant }).del();
  await db.knex("links").where({ tenant }).del();
  await db.knex("entities").where({ tenant }).del();
  await db.close();
}

const SECRET = "bench-secret-that-is-at-least-32-bytes-long";

/** A round's time and the CPU (ms) it took, by process group and by pid. */
interface Round {
  ms: number;
  before: CpuSnapshot;
  after: CpuSnapshot;
  /** A worker round's job keys. */
  keys?: string[];
}

const cpuOf = (round: Round, pid: number | undefined) => (pid === undefined ? 0 : (round.after.get(pid)?.ms ?? 0) - (round.before.get(pid)?.ms ?? 0));

/**
 * The Zeebe worker process against the REST server process, `tasks` api-request tasks a round,
 * `concurrency` at a time on each side, alternated REST, worker, worker, REST after `warmUp`
 * rounds of each. Both processes run all along (the worker long-polling, the server idle) and are
 * started alike: same database, same log level, their default pool.
 */
async function workerVersusRest(variables: Record<string, unknown>): Promise<void> {
  const zb = await ZeebeGateway.start();
  const [serverPort, pollingPort, streamingPort] = [await freePort(), await freePort(), await freePort()];
  const common = { DATABASE_URL: databaseUrl, JWT_SECRET: SECRET, HOST: "127.0.0.1", LOG_LEVEL: workerLog ? "info" : "warn" };
  const server = startNode("dist/src/main.js", { ...common, LOG_LEVEL: "warn", PORT: String(serverPort) });
  // Node refuses --cpu-prof in NODE_OPTIONS: given on the command line (one profile per process, named by its pid).
  const profile = workerProfileDir !== "" ? ["--cpu-prof", `--cpu-prof-dir=${workerProfileDir}`] : [];
  const startWorker = (port: number, env: Record<string, string>) =>
    startNode("dist/src/worker.js", { ...common, PORT: String(port), ZEEBE_ADDRESS: zb.address, WORKER_MAX_TASKS: String(concurrency), ...env }, [], profile);
  const polling = startWorker(pollingPort, {});
  // Job types of its own, so that the polling worker never takes its jobs (both run all along).
  const streaming = startWorker(streamingPort, { ZEEBE_STREAM_JOBS: "true", TOPIC_API_REQUEST: STREAMED_TYPE, TOPIC_CALCULATE_SERIES: `${STREAMED_TYPE}-calculate-series` });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    await Promise.all([waitForHealth(serverPort), waitForHealth(pollingPort), waitForHealth(streamingPort)]);
    const tenant = String(variables.tenantId);
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("bench")
      .setExpirationTime("2h")
      .sign(new TextEncoder().encode(SECRET));
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const body = JSON.stringify({ apiDefinitionExternalId: variables.apiDefinitionExternalId, queryParameters: variables.queryParameters });
    const ask = async () => {
      const { status, text } = await post(agent, serverPort, "/task-backend/tasks/bench/api/request", headers, body);
      if (status !== 200 || (JSON.parse(text) as { accessPoints?: unknown[] }).accessPoints?.length !== 2) throw new Error(`request: ${status} ${text}`);
    };
    const rest = async (): Promise<Round> => {
      let next = 0;
      const before = cpuSnapshot();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next++ < tasks) await ask();
        }),
      );
      return { ms: performance.now() - started, before, after: cpuSnapshot() };
    };
    const job = (type: string) => zb.createJob({ type, bpmnProcessId: "api-request-example-zeebe", elementId: "RequestAccessPoints", variables });
    /** Every job completed once with the walk's two access points: none failed, none thrown. */
    const checkCompleted = (keys: string[]) => {
      const completed = new Map<string, unknown[]>();
      for (const record of zb.records({ intent: "COMPLETED" })) completed.set(record.key, [...(completed.get(record.key) ?? []), record.variables]);
      for (const key of keys) {
        const once = completed.get(key);
        const points = (once?.[0] as { result?: { accessPoints?: unknown[] } } | undefined)?.result?.accessPoints;
        if (zb.job(key)?.state !== "completed" || once?.length !== 1 || points?.length !== 2) throw new Error(`job ${key}: ${JSON.stringify(zb.records({ key }))}`);
      }
    };
    /** Polling: the round's jobs created at once (a backlog), the worker already long polling; the clock stops at the last completion. */
    const viaPolling = async (): Promise<Round> => {
      const before = cpuSnapshot();
      const started = performance.now();
      const pending = new Set(Array.from({ length: tasks }, () => job("api-request")));
      const keys = [...pending];
      const ended = (state: string | undefined) => state === "completed" || state === "errorThrown" || state === "incident";
      await until(() => {
        for (const key of pending) if (ended(zb.job(key)?.state)) pending.delete(key);
        return pending.size === 0;
      }, "polling round");
      const round = { ms: performance.now() - started, before, after: cpuSnapshot(), keys };
      checkCompleted(keys);
      return round;
    };
    /**
     * Streaming: `concurrency` lanes, each creating a job and waiting for it to end before the next,
     * as the REST client's lanes do with requests — every job becomes activatable while the stream
     * is open and is pushed into it. (Jobs created in a backlog would mostly be yielded: a stream
     * gets no more than its flow-control window holds, the rest is left to the fallback polls.)
     */
    const viaStreaming = async (): Promise<Round> => {
      const keys: string[] = [];
      const before = cpuSnapshot();
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (keys.length < tasks) {
            const key = job(STREAMED_TYPE);
            keys.push(key);
            const state = await zb.settle(key, 60_000);
            if (state !== "completed") throw new Error(`job ${key}: ${JSON.stringify(zb.records({ key }))}`);
          }
        }),
      );
      const round = { ms: performance.now() - started, before, after: cpuSnapshot(), keys };
      checkCompleted(keys);
      return round;
    };
    const sides = { rest, polling: viaPolling, streaming: viaStreaming };
    const label = { rest: "REST     ", polling: "polling  ", streaming: "streaming" };
    for (let i = 0; i < warmUp; i++) {
      console.log(`warm-up round ${i + 1} of ${warmUp} (REST, polling worker, streaming worker; not counted)`);
      for (const side of ["rest", "polling", "streaming"] as const) await sides[side]();
    }
    const rounds = { rest: [] as Round[], polling: [] as Round[], streaming: [] as Round[] };
    for (const side of ["rest", "polling", "streaming", "streaming", "polling", "rest"] as const) {
      const round = await sides[side]();
      rounds[side].push(round);
      console.log(`  ${label[side]} ${rate(round.ms)}`);
    }
    const perSecond = (list: Round[]) => (tasks * list.length) / (list.reduce((sum, r) => sum + r.ms, 0) / 1000);
    /** CPU ms per task over a side's rounds: the process that ran the tasks, the database's backends, this process (client or stand-in). */
    const cpu = (list: Round[], pid: number | undefined) => {
      const per = (ms: number) => (ms / (tasks * list.length)).toFixed(2);
      const sum = (f: (r: Round) => number) => list.reduce((s, r) => s + f(r), 0);
      const groups = (r: Round) => cpuBetween(r.before, r.after);
      return {
        process: per(sum((r) => cpuOf(r, pid))),
        database: per(sum((r) => groups(r).get(`postgres ${workerDatabase}`) ?? 0)),
        here: per(sum((r) => groups(r).get("this process") ?? 0)),
      };
    };
    const restRate = perSecond(rounds.rest);
    const restCpu = cpu(rounds.rest, server.child.pid);
    console.log(`api-request, ${tasks} tasks a round, ${concurrency} at a time, PostgreSQL database ${workerDatabase}, load average ${loadavg().map((l) => l.toFixed(1)).join(" ")}:`);
    console.log(`  REST      POST /task-backend/tasks/{segment}/api/request: ${restRate.toFixed(0)} requests/s; CPU per task: server ${restCpu.process} ms, PostgreSQL backends ${restCpu.database} ms, client ${restCpu.here} ms`);
    for (const [side, worker, what] of [
      ["polling", polling, "Zeebe worker polling the stand-in:  "],
      ["streaming", streaming, "Zeebe worker streaming (stand-in): "],
    ] as const) {
      const workerRate = perSecond(rounds[side]);
      const workerCpu = cpu(rounds[side], worker.child.pid);
      console.log(
        `  ${label[side]} ${what}${workerRate.toFixed(0)} tasks/s, ratio ${(workerRate / restRate).toFixed(2)}x (goal >= 0.8x); ` +
          `CPU per task: worker ${workerCpu.process} ms, PostgreSQL backends ${workerCpu.database} ms, stand-in ${workerCpu.here} ms`,
      );
      if (workerLog) console.log(`            ${stageSummary(worker.lines, new Set(rounds[side].flatMap((r) => r.keys ?? [])))}`);
    }
  } finally {
    agent.destroy();
    for (const child of [polling, streaming, server]) child.child.kill("SIGTERM");
    await Promise.all([polling.exited, streaming.exited, server.exited]);
    await zb.close();
  }
}

/** The job type of the streaming worker's rounds. */
const STREAMED_TYPE = "api-request-streamed";

/**
 * `--worker-log`: the workers log their task lines (LOG_LEVEL=info, a cost of its own in the
 * figures), summarised after the rounds: where a job's time goes.
 */
const workerLog = flag("worker-log");

/** p50 and p90 of the task lines (of the jobs `keys`): `runMs` (taking and running the task), `reportMs` (the engine taking the report) and `durationMs` (all of it, the row settled too). */
function stageSummary(lines: string[], keys: Set<string>): string {
  const parsed = lines.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { message?: string; taskId?: string; runMs?: number; reportMs?: number; durationMs?: number };
      return entry.message === "task" && keys.has(String(entry.taskId)) ? [entry] : [];
    } catch {
      return [];
    }
  });
  const field = (name: "runMs" | "reportMs" | "durationMs") => {
    const sorted = parsed.map((l) => l[name] ?? NaN).sort((a, b) => a - b);
    return `${name} p50 ${percentile(sorted, 50)} p90 ${percentile(sorted, 90)}`;
  };
  return `${parsed.length} task lines: ${field("runMs")}, ${field("reportMs")}, ${field("durationMs")}`;
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
      // The SDK's own job worker, as a user of the SDK writes one.
      const c8 = new Camunda8(sdkConfiguration({ address: zb.address }) as never).getZeebeGrpcApiClient({ zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: "NONE" } } as never);
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
