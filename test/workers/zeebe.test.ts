import { join } from "node:path";
import { expect } from "chai";
import knexFactory from "knex";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION, exampleGraph } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { createLogger } from "../../src/logger.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../workers/camunda7/worker.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend, randomTenant } from "../support/backends.js";
import { ROOT } from "../support/process.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { ZeebeEngine } from "../support/zeebe.js";

describe("Zeebe worker against a real engine", function () {
  this.timeout(180_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let engine: ZeebeEngine;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const start = (s: Services, logs = new MemoryTransport()) => {
    workers.push(startZeebeWorker(s, { address: engine.address, timeoutMs: 20_000 }, createLogger("info", [logs])));
    return logs;
  };

  before(async () => {
    engine = await ZeebeEngine.start();
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/api-request-example.bpmn") });
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/calculate-series-example.bpmn") });
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
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  after(async () => {
    await engine?.stop();
  });

  const run = async (variables: Record<string, unknown>) =>
    (
      await engine.client.createProcessInstanceWithResult({
        bpmnProcessId: "api-request-example-zeebe",
        variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, ...variables } as never,
        requestTimeout: 30_000,
      })
    ).variables as Record<string, unknown>;

  it("completes the job with the result, and the gateway routes on it", async () => {
    start(services);
    const found = await run({ queryParameters: { publicId: "AGR-1" } });
    expect(found.outcome).to.equal("found");
    expect((found.result as { accessPoints: { externalId: string }[] }).accessPoints.map((a) => a.externalId)).to.deep.equal(["EAN-1", "EAN-2"]);
    expect((await run({ queryParameters: JSON.stringify({ publicId: "AGR-EMPTY" }) })).outcome).to.equal("none");
  });

  it("raises API_DEFINITION_NOT_FOUND as a BPMN error the boundary event catches", async () => {
    const logs = start(services);
    expect((await run({ apiDefinitionExternalId: "no-such-definition" })).outcome).to.equal("not found");
    // The instance can end before the worker has logged the acknowledged command.
    const logged = () => logs.entries.some((e) => e.message === "task" && e.outcome === "bpmnError API_DEFINITION_NOT_FOUND");
    for (let i = 0; i < 50 && !logged(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(logged()).to.equal(true);
  });

  it("fails a job on a passing fault with one retry fewer each time, and stops at zero", async () => {
    const down = knexFactory({ client: "pg", connection: "postgres://postgres@127.0.0.1:1/test", acquireConnectionTimeout: 500, log: { warn: () => {}, error: () => {} } });
    const logs = start(createServices(config, { ...db, knex: down, graph: { knex: down, presetTimeoutMs: undefined } }));
    await engine.client.createProcessInstance({ bpmnProcessId: "api-request-example-zeebe", variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } } });
    const failures = () => logs.entries.filter((e) => e.message === "task" && e.outcome === "failure UNAVAILABLE");
    for (let i = 0; i < 200 && failures().length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    // The job came with 3, 2 and 1 retries; at 0 the engine raises an incident and hands it out no more.
    expect(failures().map((e) => e.retries)).to.deep.equal([3, 2, 1]);
    await new Promise((r) => setTimeout(r, 5000));
    expect(failures()).to.have.length(3);
    await down.destroy();
  });

  it("calculates a value and decides on it; an unknown calculation is caught as a BPMN error", async () => {
    start(services);
    const calc = async (variables: Record<string, unknown>) =>
      (await engine.client.createProcessInstanceWithResult({ bpmnProcessId: "calculate-series-example-zeebe", variables: { tenantId: tenant, threshold: 40, ...variables } as never, requestTimeout: 30_000 }))
        .variables as Record<string, unknown>;
    const high = await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 21 } } });
    expect(high.outcome).to.equal("above");
    expect(high.result).to.deep.equal({ value: 42 });
    expect((await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 5 } } })).outcome).to.equal("not above");
    expect((await calc({ calculationDefinitionExternalId: "no-such-calculation" })).outcome).to.equal("not found");
  });

  it("lets two workers share a job type, each job completed exactly once", async () => {
    const first = start(services);
    const second = start(services);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => run({ queryParameters: { publicId: i % 2 === 0 ? "AGR-1" : "AGR-EMPTY" } })));
    expect(results.map((r) => r.outcome)).to.deep.equal(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "found" : "none")));
    const done = () => [...first.entries, ...second.entries].filter((e) => e.message === "task" && e.outcome === "completed").map((e) => e.taskId);
    for (let i = 0; i < 50 && done().length < 20; i++) await new Promise((r) => setTimeout(r, 100));
    const completed = done();
    expect(completed).to.have.length(20);
    expect(new Set(completed).size).to.equal(20);
  });
});
