import { expect } from "chai";
import { camunda7Settings, loadConfig, type Camunda7Settings } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { jsonVariables, startCamunda7Worker } from "../../workers/camunda7/worker.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { CAMUNDA7_ENGINES, Camunda7Engine } from "../support/camunda7.js";
import { ENGINE_START_TIMEOUT_MS, freePort, startNode } from "../support/process.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { TcpProxy } from "../support/proxy.js";
import { expectCompletedWhileStopping, LONG_DEFINITION, seedWorkerTenant, servicesWithDatabaseDown, SLOW_DEFINITION, taskLines, waitUntil } from "../support/workers.js";

for (const kind of CAMUNDA7_ENGINES) {
  describe(`Camunda 7 worker against ${kind.name}`, function () {
    this.timeout(180_000);
    const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
    let engine: Camunda7Engine;
    let db: Database;
    let services: Services;
    let tenant: string;
    const workers: RunningWorker[] = [];
    const metrics = new Metrics();
    const start = (s: Services, logs = new MemoryTransport(), options: Partial<Camunda7Settings> = {}) => {
      const settings = camunda7Settings(options.url ?? engine.baseUrl, { asyncResponseTimeoutMs: 1000, lockDurationMs: 20_000, ...options });
      const worker = startCamunda7Worker(s, settings, { database: db.knex, logger: createLogger("debug", [logs]), metrics });
      workers.push(worker);
      return { worker, logs };
    };
    const stopAll = async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
    };

    before(async function () {
      this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
      engine = await Camunda7Engine.start(kind);
      await engine.deploy("bpmn/camunda7/api-request-example.bpmn");
      await engine.deploy("bpmn/camunda7/calculate-series-example.bpmn");
      db = await backend("postgres");
      services = createServices(config, db);
      tenant = randomTenant();
      await seedWorkerTenant(services, db, tenant);
    });
    afterEach(stopAll);
    after(async () => {
      await stopAll();
      await engine?.stop();
    });

    const run = (variables: Record<string, unknown>) =>
      engine.startInstance("api-request-example", { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, ...variables });

    it("completes the task with the result as a Json variable, and the gateway routes on it", async () => {
      start(services);
      const found = await run({ queryParameters: { publicId: "AGR-1" } });
      const none = await run({ queryParameters: { publicId: "AGR-EMPTY" } });
      expect(await engine.settle(found)).to.equal("ended");
      expect(await engine.settle(none)).to.equal("ended");
      expect(await engine.endEvent(found)).to.equal("EndFound");
      expect(await engine.endEvent(none)).to.equal("EndNone");
      const result = await engine.variable(found, "result");
      expect(result?.type).to.equal("Json");
      const value = JSON.parse(String(result?.value)) as { accessPoints: { externalId: string; accessPointType: string }[] };
      expect(value.accessPoints.map((a) => [a.externalId, a.accessPointType])).to.deep.equal([
        ["EAN-1", "GAS"],
        ["EAN-2", "WATER"],
      ]);
      // Counted once the engine has answered the completion: the instances may end first.
      await waitUntil(async () => (await metrics.registry.metrics()).includes('tasks_completed_total{engine="camunda7",topic="api-request"} 2'), "both completions counted");
      const exposed = await metrics.registry.metrics();
      expect(exposed).to.contain('tasks_fetched_total{engine="camunda7",topic="api-request"} 2');
      expect(exposed).to.contain('tasks_completed_total{engine="camunda7",topic="api-request"} 2');
      expect(exposed).to.match(/task_duration_seconds_count\{engine="camunda7",topic="api-request",outcome="completed"\} 2/);
    });

    it("reads queryParameters given as a String variable holding JSON", async () => {
      start(services);
      const id = await engine.startInstance("api-request-example", {
        apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId,
        tenantId: tenant,
        queryParameters: JSON.stringify({ publicId: "AGR-1" }),
      });
      expect(await engine.settle(id)).to.equal("ended");
      expect(await engine.endEvent(id)).to.equal("EndFound");
      expect(JSON.parse(String((await engine.variable(id, "result"))?.value)).accessPoints).to.have.length(2);
    });

    it("runs a task of a tenant's deployment in that tenant when no tenantId variable is given", async () => {
      const deployment = await engine.deploy("bpmn/camunda7/api-request-example.bpmn", tenant);
      try {
        const { logs } = start(services);
        const id = await engine.startInstance("api-request-example", { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } }, tenant);
        expect(await engine.settle(id)).to.equal("ended");
        expect(await engine.endEvent(id)).to.equal("EndFound");
        await waitUntil(() => taskLines(logs.entries, "completed").length > 0, "completion logged");
        expect(taskLines(logs.entries, "completed")[0]?.tenant).to.equal(tenant);
      } finally {
        // A key deployed for a tenant and for none makes the key alone ambiguous to the other tests.
        await engine.call("DELETE", `/deployment/${deployment}?cascade=true`);
      }
    });

    it("raises API_DEFINITION_NOT_FOUND as a BPMN error the boundary event catches", async () => {
      const { logs } = start(services);
      const id = await run({ apiDefinitionExternalId: "no-such-definition", queryParameters: {} });
      expect(await engine.settle(id)).to.equal("ended");
      expect(await engine.endEvent(id)).to.equal("EndNotFound");
      // The worker logs the task once the engine has answered its BPMN error: the instance may end first.
      await waitUntil(() => logs.entries.some((e) => e.message === "task" && e.outcome === "bpmnError API_DEFINITION_NOT_FOUND"), "the BPMN error logged");
    });

    it("reports a passing fault as a failure with decreasing retries and a growing back-off, then the engine raises an incident", async () => {
      const broken = servicesWithDatabaseDown(config, db);
      const { logs } = start(broken.services);
      const id = await run({ queryParameters: { publicId: "AGR-1" } });
      expect(await engine.settle(id, 60_000)).to.equal("incident");
      // The incident can be raised before the worker has logged the acknowledged third failure.
      await waitUntil(() => taskLines(logs.entries, "failure UNAVAILABLE").length >= 3, "three failures logged");
      // The task came with no retries set (the default 3 applies), then 2, then 1.
      expect(taskLines(logs.entries, "failure UNAVAILABLE").map((e) => e.retries)).to.deep.equal([null, 2, 1]);
      const log = await engine.call<{ retries: number; timestamp: string }[]>("GET", `/history/external-task-log?processInstanceId=${id}&failureLog=true&sortBy=timestamp&sortOrder=asc`);
      // Each failure is logged with the retries the task had then: none set, 2, 1 (and 0 after the last).
      expect(log.map((e) => e.retries)).to.deep.equal([null, 2, 1]);
      // Back-off 1 s, then 2 s, between the attempts.
      const at = log.map((e) => Date.parse(e.timestamp));
      expect(at[1]! - at[0]!).to.be.at.least(1000);
      expect(at[2]! - at[1]!).to.be.at.least(2000);
      const [incident] = await engine.call<{ incidentMessage: string; incidentType: string }[]>("GET", `/incident?processInstanceId=${id}`);
      expect(incident?.incidentType).to.equal("failedExternalTask");
      expect(incident?.incidentMessage).to.match(/not reachable/);
      await broken.close();
    });

    it("makes a completion the engine refuses a failure, then an incident, not a task run again at every lock expiry", async () => {
      const { logs } = start(services);
      // The example's gateway reads `result`; written to another variable, the gateway fails inside the completion.
      const id = await run({ queryParameters: { publicId: "AGR-1" }, resultVariable: "elsewhere" });
      expect(await engine.settle(id, 60_000)).to.equal("incident");
      await waitUntil(() => taskLines(logs.entries, "failure COMPLETION_REFUSED").length >= 3, "three failures logged");
      expect(taskLines(logs.entries, "failure COMPLETION_REFUSED")).to.have.length(3);
      const [incident] = await engine.call<{ incidentMessage: string }[]>("GET", `/incident?processInstanceId=${id}`);
      expect(incident?.incidentMessage).to.match(/^the engine refused the completion/);
    });

    it("calculates a series and decides on its value; an unknown calculation is caught as a BPMN error", async () => {
      start(services);
      const calc = (variables: Record<string, unknown>) => engine.startInstance("calculate-series-example", { tenantId: tenant, threshold: 40, ...variables });
      const high = await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 21 } } });
      const low = await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 5 } } });
      const missing = await calc({ calculationDefinitionExternalId: "no-such-calculation" });
      for (const id of [high, low, missing]) expect(await engine.settle(id)).to.equal("ended");
      expect(await engine.endEvent(high)).to.equal("EndHigh");
      expect(await engine.endEvent(low)).to.equal("EndLow");
      expect(await engine.endEvent(missing)).to.equal("EndNotFound");
      expect(JSON.parse(String((await engine.variable(high, "result"))?.value))).to.deep.equal({ value: 42 });
    });

    const startServer = async (env: Record<string, string> = {}) => {
      const server = startNode("dist/src/main.js", {
        DATABASE_URL: TEST_DATABASE_URL,
        JWT_SECRET: TEST_JWT_SECRET,
        PORT: String(await freePort()),
        HOST: "127.0.0.1",
        CAMUNDA_URL: engine.baseUrl,
        TRANSFORM_TIMEOUT_MS: "60000",
        CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "3000",
        ...env,
      });
      await server.waitFor(/camunda 7 worker started/);
      return server;
    };
    const lockedBy = async (id: string) => (await engine.call<{ workerId: string | null }[]>("GET", `/external-task?processInstanceId=${id}`))[0]?.workerId ?? null;

    it("on SIGTERM with every slot taken: fetches nothing more, completes the task in hand, then the server process exits 0", async () => {
      const server = await startServer({ WORKER_MAX_TASKS: "1" });
      try {
        const id = await run({ apiDefinitionExternalId: SLOW_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
        await waitUntil(async () => (await lockedBy(id)) !== null, "slow task locked");
        server.child.kill("SIGTERM");
        await server.waitFor(/shutting down/);
        const later = await run({ queryParameters: { publicId: "AGR-1" } });
        expect(await server.exited).to.equal(0);
        expect(await engine.settle(id)).to.equal("ended");
        expect(await engine.endEvent(id)).to.equal("EndFound");
        expectCompletedWhileStopping(server.lines);
        // The instance started during the shutdown was never fetched.
        expect(await lockedBy(later)).to.equal(null);
        expect(server.lines.filter((l) => l.includes('"message":"task"'))).to.have.length(1);
        await engine.call("DELETE", `/process-instance/${later}`);
      } finally {
        server.kill();
      }
    });

    it("on SIGTERM while idle in a long poll: runs the task that poll brings, then exits 0", async () => {
      const server = await startServer({ LOG_LEVEL: "debug" });
      try {
        // The worker is waiting in a long poll (3 s here) once it has logged its fetch; a task created now is handed to that poll.
        await server.waitFor(/"message":"camunda 7 fetch"/);
        server.child.kill("SIGTERM");
        await server.waitFor(/shutting down/);
        const id = await run({ queryParameters: { publicId: "AGR-1" } });
        expect(await server.exited).to.equal(0);
        expect(await engine.settle(id)).to.equal("ended");
        expect(await engine.endEvent(id)).to.equal("EndFound");
        expectCompletedWhileStopping(server.lines);
      } finally {
        server.kill();
      }
    });

    it("lets two workers share a topic, each task completed exactly once", async () => {
      const first = start(services);
      const second = start(services);
      const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => run({ queryParameters: { publicId: i % 2 === 0 ? "AGR-1" : "AGR-EMPTY" } })));
      for (const id of ids) expect(await engine.settle(id, 60_000)).to.equal("ended");
      const all = [...first.logs.entries, ...second.logs.entries];
      await waitUntil(() => taskLines(all, "completed").length >= 20, "20 completions logged");
      const ran = [...first.logs.entries, ...second.logs.entries].filter((e) => e.message === "task");
      // Twenty task runs in all, each a different task, each completed: none was run twice.
      expect(ran).to.have.length(20);
      expect(new Set(ran.map((e) => e.taskId)).size).to.equal(20);
      expect(ran.every((e) => e.outcome === "completed")).to.equal(true);
    });

    it("keeps the lock of a task that runs longer than the lock duration: no other worker gets it", async () => {
      const patient = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_TIMEOUT_MS: "60000" }), db);
      const holder = start(patient, new MemoryTransport(), { lockDurationMs: 3000 });
      const id = await run({ apiDefinitionExternalId: LONG_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
      await waitUntil(async () => (await engine.call<{ workerId: string | null }[]>("GET", `/external-task?processInstanceId=${id}`))[0]?.workerId === holder.worker.workerId, "task locked");
      // A second worker polls the topic while the first runs past its 3 s lock several times (an
      // extension every second: a loaded engine answering one late still leaves the lock standing).
      const other = start(patient, new MemoryTransport(), { lockDurationMs: 3000 });
      expect(await engine.settle(id, 120_000)).to.equal("ended");
      await waitUntil(() => taskLines(holder.logs.entries, "completed").length > 0, "completion logged");
      expect(taskLines(holder.logs.entries, "completed")).to.have.length(1);
      expect(holder.logs.entries.filter((e) => e.level === "error" || e.message === "lock extension failed")).to.deep.equal([]);
      expect(other.logs.entries.filter((e) => e.message === "task")).to.deep.equal([]);
      expect(Number((taskLines(holder.logs.entries, "completed")[0] as { durationMs: number }).durationMs)).to.be.greaterThan(3000);
    });

    it("survives a lost engine connection: logs it once, backs off, and takes tasks again when the engine is back", async () => {
      const proxy = await TcpProxy.start(new URL(engine.baseUrl).host);
      try {
        const { logs } = start(services, new MemoryTransport(), { url: proxy.through(engine.baseUrl) });
        const before = await run({ queryParameters: { publicId: "AGR-1" } });
        expect(await engine.settle(before)).to.equal("ended");
        await proxy.cut();
        // A long poll cut off on the way is still waiting at the engine for its 1 s: a task created
        // then would be locked for a worker that never hears of it, until the lock expires. Once the
        // worker has failed three polls (0.5 s, then 1 s apart), that poll has ended.
        await waitUntil(() => failedPolls(logs.entries) >= 3, "three failed polls");
        const during = await run({ queryParameters: { publicId: "AGR-1" } });
        // A fourth failed poll, 2 s later: the worker keeps trying, the task waits.
        await waitUntil(() => failedPolls(logs.entries) >= 4, "four failed polls");
        expect((await engine.call<{ state: string }>("GET", `/history/process-instance/${during}`)).state).to.equal("ACTIVE");
        expect(logs.entries.filter((e) => e.message === "camunda 7 unreachable; retrying")).to.have.length(1);
        await proxy.restore();
        expect(await engine.settle(during, 60_000)).to.equal("ended");
        expect(await engine.endEvent(during)).to.equal("EndFound");
        const back = logs.entries.find((e) => e.message === "camunda 7 reachable again");
        // Back-off 0.5, 1, 2 s …: a handful of failed polls in 4 s, not one every 20 ms.
        expect(Number(back?.failedPolls)).to.be.within(2, 6);
      } finally {
        await proxy.cut();
      }
    });
  });
}

/** The failed polls of the current outage, as the worker's debug lines count them (the first failure is the warning). */
function failedPolls(entries: Record<string, unknown>[]): number {
  const counts = entries.filter((e) => e.message === "camunda 7 still unreachable").map((e) => Number(e.failedPolls));
  return Math.max(entries.some((e) => e.message === "camunda 7 unreachable; retrying") ? 1 : 0, ...counts);
}

describe("Camunda 7 output variables", () => {
  it("are Json variables whatever the JSON value, serialised once (as complete() sends them)", () => {
    const typed = jsonVariables({ object: { a: 1 }, list: [1, "x"], count: 42, text: "x", none: null }).getDirtyVariables();
    expect(Object.values(typed).map((v) => v.type)).to.deep.equal(["json", "json", "json", "json", "json"]);
    expect(Object.fromEntries(Object.entries(typed).map(([k, v]) => [k, v.value]))).to.deep.equal({ object: '{"a":1}', list: '[1,"x"]', count: "42", text: '"x"', none: "null" });
  });
});
