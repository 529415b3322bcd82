import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "chai";
import { loadConfig, zeebeSettings, type ZeebeSettings } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createLogger } from "../../src/logger.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend, randomTenant } from "../support/backends.js";
import { TcpProxy } from "../support/proxy.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { seedWorkerTenant, taskLines, waitUntil } from "../support/workers.js";
import { ZeebeGateway } from "../support/zeebe-gateway.js";

/** Fallback polls ten minutes apart: within a test only the stream (and the poll at its opening) can bring a job. */
const NO_POLLING_MS = 600_000;

describe("Zeebe worker with job streaming (ZEEBE_STREAM_JOBS) against the gateway stand-in", function () {
  this.timeout(120_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let gateway: ZeebeGateway;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const start = (s: Services, given: Partial<ZeebeSettings> = {}, address = gateway.address) => {
    const logs = new MemoryTransport();
    const settings = zeebeSettings(address, { lockDurationMs: 60_000, streamJobs: true, streamPollIntervalMs: NO_POLLING_MS, ...given });
    const worker = startZeebeWorker(s, settings, { database: db.knex, logger: createLogger("debug", [logs]) });
    workers.push(worker);
    return { logs, worker };
  };

  before(async () => {
    db = await backend("postgres");
    services = createServices(config, db);
    tenant = randomTenant();
    await seedWorkerTenant(services, db, tenant);
  });
  beforeEach(async () => {
    gateway = await ZeebeGateway.start();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await gateway.close();
  });

  /** The job of the example model's service task (bpmn/zeebe/api-request-example.bpmn). */
  const createJob = (variables: Record<string, unknown> = {}) =>
    gateway.createJob({
      type: "api-request",
      bpmnProcessId: "api-request-example-zeebe",
      elementId: "RequestAccessPoints",
      variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" }, ...variables },
    });
  const linesOf = (logs: MemoryTransport, message: string) => logs.entries.filter((e) => e.message === message && e.taskType === "api-request");
  /** The api-request stream is open and the poll made at its opening is over: from now on only the stream brings jobs. */
  const streamReady = async (logs: MemoryTransport, opened = 1) => {
    await waitUntil(() => linesOf(logs, "zeebe job stream open").length >= opened && linesOf(logs, "zeebe fallback poll").length >= opened, "the job stream open, its first poll over");
  };
  /** Services whose API requests take `delayMs` longer, counting how many run at once. */
  const slowServices = (delayMs: number) => {
    const seen = { running: 0, most: 0, started: 0 };
    const apiDefinitions = Object.create(services.apiDefinitions) as Services["apiDefinitions"];
    apiDefinitions.request = async (...args) => {
      seen.started++;
      seen.running++;
      seen.most = Math.max(seen.most, seen.running);
      try {
        await sleep(delayMs);
        return await services.apiDefinitions.request(...args);
      } finally {
        seen.running--;
      }
    };
    return { services: { ...services, apiDefinitions }, seen };
  };

  it("completes jobs pushed through the stream, each task line saying so", async () => {
    const { logs } = start(services);
    await streamReady(logs);
    const keys = Array.from({ length: 5 }, () => createJob());
    for (const key of keys) expect(await gateway.settle(key)).to.equal("completed");
    await waitUntil(() => taskLines(logs.entries, "completed").length >= 5, "five completions logged");
    const ran = logs.entries.filter((e) => e.message === "task");
    expect(ran).to.have.length(5);
    expect(ran.map((e) => e.via)).to.deep.equal(Array(5).fill("stream"));
    // No poll but the one at the stream's opening.
    expect(linesOf(logs, "zeebe fallback poll")).to.have.length(1);
  });

  it("takes jobs created before the stream opened by polls, one after another past its cap", async () => {
    const keys = Array.from({ length: 6 }, () => createJob());
    const { logs } = start(services, { maxTasks: 2 });
    for (const key of keys) expect(await gateway.settle(key, 60_000)).to.equal("completed");
    await waitUntil(() => taskLines(logs.entries, "completed").length >= 6, "six completions logged");
    const ran = logs.entries.filter((e) => e.message === "task");
    expect(ran.map((e) => e.via)).to.deep.equal(Array(6).fill("poll"));
    expect(new Set(ran.map((e) => e.taskId)).size).to.equal(6);
  });

  it("never holds more jobs than its cap: the rest are handed back or wait, and each completes exactly once", async () => {
    const slow = slowServices(400);
    const { logs, worker } = start(slow.services, { maxTasks: 2, streamPollIntervalMs: 1000 });
    await streamReady(logs);
    const keys = Array.from({ length: 8 }, () => createJob());
    for (const key of keys) expect(await gateway.settle(key, 60_000)).to.equal("completed");
    await waitUntil(() => taskLines(logs.entries, "completed").length >= 8, "eight completions logged");
    expect(slow.seen.most).to.equal(2);
    const ran = logs.entries.filter((e) => e.message === "task");
    expect(ran).to.have.length(8);
    expect(new Set(ran.map((e) => e.taskId)).size).to.equal(8);
    // The stream was paused at the cap and read again below it, never cancelled (a cancel loses the jobs on their way).
    expect(linesOf(logs, "zeebe job stream paused: the worker has its cap of jobs in hand").length).to.be.greaterThan(0);
    expect(linesOf(logs, "zeebe job stream resumed").length).to.be.greaterThan(0);
    expect(linesOf(logs, "zeebe job stream cancelled")).to.deep.equal([]);
    // No job waited for its job timeout (60 s): a job handed back was failed with its retries untouched.
    const jobs = gateway.records().filter((r) => keys.includes(r.key));
    expect(jobs.filter((r) => r.intent === "TIMED_OUT")).to.deep.equal([]);
    const handedBack = jobs.filter((r) => r.intent === "FAILED");
    expect(handedBack.every((r) => r.retries === 3 && r.retryBackoff === 0 && String(r.errorMessage).includes(`worker ${worker.workerId} had its cap of 2 jobs`))).to.equal(true);
    expect(handedBack.length).to.equal(linesOf(logs, "zeebe job handed back: the worker has its cap of jobs in hand").length);
  });

  it("frees a job's slot as its report is sent: at a cap of one, the next job runs while the gateway has not yet answered the first report", async () => {
    const slow = slowServices(50);
    const { logs } = start(slow.services, { maxTasks: 1 });
    await streamReady(logs);
    const stall = gateway.stall(["CompleteJob"]);
    try {
      const first = createJob();
      await waitUntil(() => slow.seen.started === 1 && slow.seen.running === 0, "the first job run (its report then sent, held by the gateway)");
      await sleep(200);
      const second = createJob();
      // Read from the stream and run although the first job's completion is still unanswered.
      await waitUntil(() => slow.seen.started === 2 && slow.seen.running === 0, "the second job run", 10_000);
      expect(gateway.job(first)?.state).to.equal("activated");
      expect(slow.seen.most).to.equal(1);
      stall.release();
      expect([await gateway.settle(first), await gateway.settle(second)]).to.deep.equal(["completed", "completed"]);
    } finally {
      stall.release();
    }
    await waitUntil(() => taskLines(logs.entries, "completed").length === 2, "two completions logged");
    expect(logs.entries.filter((e) => e.message === "task").map((e) => e.via)).to.deep.equal(["stream", "stream"]);
    expect(linesOf(logs, "zeebe job handed back: the worker has its cap of jobs in hand")).to.deep.equal([]);
  });

  it("opens the stream again after losing the gateway, and takes new jobs through it", async () => {
    const proxy = await TcpProxy.start(gateway.address);
    try {
      const { logs } = start(services, {}, proxy.through(gateway.address));
      await streamReady(logs);
      expect(await gateway.settle(createJob())).to.equal("completed");
      await waitUntil(() => taskLines(logs.entries, "completed").length === 1, "the completion acknowledged");
      await proxy.cut();
      await waitUntil(() => linesOf(logs, "zeebe job stream lost; reopening when the gateway answers").length === 1, "the lost stream logged");
      // A few failed probes while the gateway is away, logged once.
      await waitUntil(() => linesOf(logs, "zeebe gateway still unreachable").length >= 2, "two failed probes");
      await proxy.restore();
      await waitUntil(() => linesOf(logs, "zeebe job stream reopened").length === 1, "the stream reopened", 60_000);
      await streamReady(logs, 2);
      expect(linesOf(logs, "zeebe job stream lost; reopening when the gateway answers")).to.have.length(1);
      const after = createJob();
      expect(await gateway.settle(after, 60_000)).to.equal("completed");
      await waitUntil(() => taskLines(logs.entries, "completed").length >= 2, "two completions logged");
      expect(logs.entries.filter((e) => e.message === "task").map((e) => e.via)).to.deep.equal(["stream", "stream"]);
    } finally {
      await proxy.cut();
    }
  });
  it("opens the stream again after the gateway restarts on the same port, and takes new jobs through it", async () => {
    const { logs } = start(services);
    await streamReady(logs);
    await gateway.stop();
    await waitUntil(() => linesOf(logs, "zeebe job stream lost; reopening when the gateway answers").length === 1, "the lost stream logged");
    await gateway.restart();
    await waitUntil(() => linesOf(logs, "zeebe job stream reopened").length === 1, "the stream reopened", 60_000);
    await streamReady(logs, 2);
    const key = createJob();
    expect(await gateway.settle(key)).to.equal("completed");
    await waitUntil(() => taskLines(logs.entries, "completed").length === 1, "the completion logged");
    expect(logs.entries.filter((e) => e.message === "task").map((e) => e.via)).to.deep.equal(["stream"]);
    expect(gateway.records({ key }).map((r) => [r.intent, r.via])).to.deep.equal([
      ["CREATED", undefined],
      ["ACTIVATED", "stream"],
      ["COMPLETED", undefined],
    ]);
  });

  it("recovers from back-pressure (RESOURCE_EXHAUSTED on the stream and the polls): every job completed once", async () => {
    const keys = Array.from({ length: 4 }, () => createJob());
    gateway.backPressure(6);
    const { logs } = start(services, { streamPollIntervalMs: 500 });
    for (const key of keys) expect(await gateway.settle(key, 60_000)).to.equal("completed");
    expect(gateway.calls().filter((c) => c.status === "RESOURCE_EXHAUSTED")).to.have.length(6);
    for (const key of keys) expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "COMPLETED"]);
    await waitUntil(() => taskLines(logs.entries, "completed").length === 4, "four completions logged");
    // New jobs come through the stream once the pressure is gone.
    await waitUntil(() => gateway.openCalls().some((c) => c.kind === "stream" && c.type === "api-request"), "the api-request stream open");
    const later = createJob();
    expect(await gateway.settle(later)).to.equal("completed");
    expect(gateway.records({ key: later, intent: "ACTIVATED" }).map((r) => r.via)).to.deep.equal(["stream"]);
  });
});
