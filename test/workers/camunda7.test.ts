import { expect } from "chai";
import knexFactory from "knex";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION, exampleGraph } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import { startCamunda7Worker, type RunningWorker } from "../../workers/camunda7/worker.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { Camunda7Engine } from "../support/camunda7.js";
import { freePort, startNode } from "../support/process.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";

describe("Camunda 7 worker against a real engine", function () {
  this.timeout(180_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let engine: Camunda7Engine;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const metrics = new Metrics();
  const start = (s: Services, logs = new MemoryTransport()) => {
    const worker = startCamunda7Worker(s, { baseUrl: engine.baseUrl, asyncResponseTimeoutMs: 1000, lockDurationMs: 20_000 }, createLogger("info", [logs]), metrics);
    workers.push(worker);
    return { worker, logs };
  };
  const stopAll = async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  };

  before(async () => {
    engine = await Camunda7Engine.start();
    await engine.deploy("bpmn/camunda7/api-request-example.bpmn");
    await engine.deploy("bpmn/camunda7/calculate-series-example.bpmn");
    db = await backend("postgres");
    services = createServices(config, db);
    tenant = randomTenant();
    const { entities, links } = exampleGraph(tenant, [{ publicId: "AGR-1", accessPoints: [["EAN-1", "GAS"], ["EAN-2", "WATER"]] }, { publicId: "AGR-EMPTY", accessPoints: [] }]);
    await upsertEntities(db.knex, tenant, entities);
    await createLinks(db.knex, tenant, links);
    await services.apiDefinitions.create(tenant, EXAMPLE_DEFINITION);
    await services.calculations.create(tenant, {
      externalId: "doubled",
      calculationType: "EXPRESSION",
      data: { inputDefinitions: [{ name: "a", type: "VALUE" }], calculation: { expression: "a * 2", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 0 } } } },
    });
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

  it("raises API_DEFINITION_NOT_FOUND as a BPMN error the boundary event catches", async () => {
    const { logs } = start(services);
    const id = await run({ apiDefinitionExternalId: "no-such-definition", queryParameters: {} });
    expect(await engine.settle(id)).to.equal("ended");
    expect(await engine.endEvent(id)).to.equal("EndNotFound");
    expect(logs.entries.some((e) => e.message === "task" && e.outcome === "bpmnError API_DEFINITION_NOT_FOUND")).to.equal(true);
  });

  it("reports a passing fault as a failure with decreasing retries, then the engine raises an incident", async () => {
    const down = knexFactory({ client: "pg", connection: "postgres://postgres@127.0.0.1:1/test", acquireConnectionTimeout: 500, log: { warn: () => {}, error: () => {} } });
    const broken = createServices(config, { ...db, knex: down, graph: { knex: down, presetTimeoutMs: undefined } });
    const { logs } = start(broken);
    const id = await run({ queryParameters: { publicId: "AGR-1" } });
    expect(await engine.settle(id, 60_000)).to.equal("incident");
    const failures = logs.entries.filter((e) => e.message === "task" && e.outcome === "failure UNAVAILABLE");
    expect(failures).to.have.length(3);
    const [incident] = await engine.call<{ incidentMessage: string; incidentType: string }[]>("GET", `/incident?processInstanceId=${id}`);
    expect(incident?.incidentType).to.equal("failedExternalTask");
    expect(incident?.incidentMessage).to.match(/not reachable/);
    await down.destroy();
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

  it("on SIGTERM stops fetching, completes the task in hand, then the server process exits 0", async () => {
    // A transform that takes a couple of seconds: a task that is surely in hand when the signal comes.
    await services.apiDefinitions.create(tenant, {
      ...EXAMPLE_DEFINITION,
      externalId: "slow-access-points",
      transform: '( $loop := function($i){ $i < 400000 ? $loop($i + 1) : $i }; { "accessPoints": result(?accessPoint) { externalId }, "steps": $loop(0) } )',
    });
    const server = startNode("dist/src/main.js", {
      DATABASE_URL: TEST_DATABASE_URL,
      JWT_SECRET: TEST_JWT_SECRET,
      PORT: String(await freePort()),
      HOST: "127.0.0.1",
      CAMUNDA_URL: engine.baseUrl,
      TRANSFORM_TIMEOUT_MS: "60000",
    });
    try {
      await server.waitFor(/camunda 7 worker started/);
      const id = await run({ apiDefinitionExternalId: "slow-access-points", queryParameters: { publicId: "AGR-1" } });
      for (let i = 0; i < 100; i++) {
        const [task] = await engine.call<{ workerId: string | null }[]>("GET", `/external-task?processInstanceId=${id}`);
        if (task?.workerId) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      server.child.kill("SIGTERM");
      expect(await server.exited).to.equal(0);
      expect(await engine.settle(id)).to.equal("ended");
      expect(await engine.endEvent(id)).to.equal("EndFound");
      const lines = server.lines.join("\n");
      expect(lines.indexOf('"outcome":"completed"')).to.be.greaterThan(lines.indexOf("shutting down"));
      expect(lines.indexOf('"message":"stopped"')).to.be.greaterThan(lines.indexOf('"outcome":"completed"'));
    } finally {
      server.kill();
    }
  });

  it("lets two workers share a topic, each task completed exactly once", async () => {
    const first = start(services);
    const second = start(services);
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => run({ queryParameters: { publicId: i % 2 === 0 ? "AGR-1" : "AGR-EMPTY" } })));
    for (const id of ids) expect(await engine.settle(id, 60_000)).to.equal("ended");
    const completed = [...first.logs.entries, ...second.logs.entries].filter((e) => e.message === "task" && e.outcome === "completed").map((e) => e.taskId as string);
    expect(completed).to.have.length(20);
    expect(new Set(completed).size).to.equal(20);
  });
});

