import { join } from "node:path";
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
import { ENGINE_START_TIMEOUT_MS, ROOT } from "../support/process.js";
import { TcpProxy } from "../support/proxy.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { seedWorkerTenant, taskLines, waitUntil } from "../support/workers.js";
import { ZeebeEngine } from "../support/zeebe.js";

/** Fallback polls ten minutes apart: within a test only the stream (and the poll at its opening) can bring a job. */
const NO_POLLING_MS = 600_000;

describe("Zeebe worker with job streaming (ZEEBE_STREAM_JOBS) against a real broker", function () {
  this.timeout(180_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let engine: ZeebeEngine;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const start = (s: Services, given: Partial<ZeebeSettings> = {}, address = engine.address) => {
    const logs = new MemoryTransport();
    const settings = zeebeSettings(address, { lockDurationMs: 60_000, streamJobs: true, streamPollIntervalMs: NO_POLLING_MS, ...given });
    const worker = startZeebeWorker(s, settings, { database: db.knex, logger: createLogger("debug", [logs]) });
    workers.push(worker);
    return { logs, worker };
  };

  before(async function () {
    this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
    engine = await ZeebeEngine.shared();
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/api-request-example.bpmn") });
    db = await backend("postgres");
    await db.knex("tasks_in_hand").where({ engine: "zeebe" }).del();
    services = createServices(config, db);
    tenant = randomTenant();
    await seedWorkerTenant(services, db, tenant);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  const startInstance = async (variables: Record<string, unknown> = {}) =>
    String(
      (
        await engine.client.createProcessInstance({
          bpmnProcessId: "api-request-example-zeebe",
          variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" }, ...variables } as never,
        })
      ).processInstanceKey,
    );
  const linesOf = (logs: MemoryTransport, message: string) => logs.entries.filter((e) => e.message === message && e.taskType === "api-request");
  /** The api-request stream is open and the poll made at its opening is over: from now on only the stream brings jobs. */
  const streamReady = async (logs: MemoryTransport, opened = 1) => {
    await waitUntil(() => linesOf(logs, "zeebe job stream open").length >= opened && linesOf(logs, "zeebe fallback poll").length >= opened, "the job stream open, its first poll over");
  };
  /** Services whose API requests take `delayMs` longer, counting how many run at once. */
  const slowServices = (delayMs: number) => {
    const seen = { running: 0, most: 0 };
    const apiDefinitions = Object.create(services.apiDefinitions) as Services["apiDefinitions"];
    apiDefinitions.request = async (...args) => {
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
    const keys = await Promise.all(Array.from({ length: 5 }, () => startInstance()));
    for (const key of keys) expect(await engine.settle(key)).to.equal("ended");
    await waitUntil(() => taskLines(logs.entries, "completed").length >= 5, "five completions logged");
    const ran = logs.entries.filter((e) => e.message === "task");
    expect(ran).to.have.length(5);
    expect(ran.map((e) => e.via)).to.deep.equal(Array(5).fill("stream"));
    // No poll but the one at the stream's opening.
    expect(linesOf(logs, "zeebe fallback poll")).to.have.length(1);
  });

  it("takes jobs created before the stream opened by polls, one after another past its cap", async () => {
    const keys = await Promise.all(Array.from({ length: 6 }, () => startInstance()));
    const { logs } = start(services, { maxTasks: 2 });
    for (const key of keys) expect(await engine.settle(key, 60_000)).to.equal("ended");
    await waitUntil(() => taskLines(logs.entries, "completed").length >= 6, "six completions logged");
    const ran = logs.entries.filter((e) => e.message === "task");
    expect(ran.map((e) => e.via)).to.deep.equal(Array(6).fill("poll"));
    expect(new Set(ran.map((e) => e.taskId)).size).to.equal(6);
  });

  it("never holds more jobs than its cap: the rest are handed back or wait, and each completes exactly once", async () => {
    const slow = slowServices(400);
    const { logs, worker } = start(slow.services, { maxTasks: 2, streamPollIntervalMs: 1000 });
    await streamReady(logs);
    const keys = await Promise.all(Array.from({ length: 8 }, () => startInstance()));
    for (const key of keys) expect(await engine.settle(key, 60_000)).to.equal("ended");
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
    const jobs = (await engine.records("JOB")).filter((r) => keys.includes(String(r.value.processInstanceKey)) && r.recordType === "EVENT");
    expect(jobs.filter((r) => r.intent === "TIMED_OUT")).to.deep.equal([]);
    const handedBack = jobs.filter((r) => r.intent === "FAILED");
    expect(handedBack.every((r) => r.value.retries === 3 && String(r.value.errorMessage).includes(`worker ${worker.workerId} had its cap of 2 jobs`))).to.equal(true);
    expect(handedBack.length).to.equal(linesOf(logs, "zeebe job handed back: the worker has its cap of jobs in hand").length);
  });

  it("opens the stream again after losing the gateway, and takes new jobs through it", async () => {
    const proxy = await TcpProxy.start(engine.address);
    try {
      const { logs } = start(services, {}, proxy.through(engine.address));
      await streamReady(logs);
      expect(await engine.settle(await startInstance())).to.equal("ended");
      await proxy.cut();
      await waitUntil(() => linesOf(logs, "zeebe job stream lost; reopening when the gateway answers").length === 1, "the lost stream logged");
      // A few failed probes while the gateway is away, logged once.
      await waitUntil(() => linesOf(logs, "zeebe gateway still unreachable").length >= 2, "two failed probes");
      await proxy.restore();
      await waitUntil(() => linesOf(logs, "zeebe job stream reopened").length === 1, "the stream reopened", 60_000);
      await streamReady(logs, 2);
      expect(linesOf(logs, "zeebe job stream lost; reopening when the gateway answers")).to.have.length(1);
      const after = await startInstance();
      expect(await engine.settle(after, 60_000)).to.equal("ended");
      await waitUntil(() => taskLines(logs.entries, "completed").length >= 2, "two completions logged");
      expect(logs.entries.filter((e) => e.message === "task").map((e) => e.via)).to.deep.equal(["stream", "stream"]);
    } finally {
      await proxy.cut();
    }
  });
});
