import { expect } from "chai";
import { loadConfig, zeebeSettings } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createLogger } from "../../src/logger.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend, randomTenant } from "../support/backends.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { seedWorkerTenant, servicesWithDatabaseDown, taskLines, waitUntil } from "../support/workers.js";
import { ZeebeGateway } from "../support/zeebe-gateway.js";

/**
 * The `retryBackoff` task header (bpmn/element-templates/camunda8-*.json, "Retries" group) on the
 * gateway stand-in: a job failing on a passing fault is failed with the header's back-off instead of
 * the worker's growing one, polled or streamed; a header that is not a duration keeps the default
 * back-off and is logged as a warning.
 */
describe("Zeebe worker: the retryBackoff task header", function () {
  this.timeout(60_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let gateway: ZeebeGateway;
  let db: Database;
  let broken: ReturnType<typeof servicesWithDatabaseDown>;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  /** A worker whose every task meets a passing fault (its services' database is unreachable). */
  const start = (streamJobs: boolean) => {
    const logs = new MemoryTransport();
    const worker = startZeebeWorker(broken.services, zeebeSettings(gateway.address, { lockDurationMs: 20_000, streamJobs }), { database: db.knex, logger: createLogger("debug", [logs]) });
    workers.push(worker);
    return logs;
  };
  const job = (retries: number, customHeaders: Record<string, string>) =>
    gateway.createJob({
      type: "api-request",
      bpmnProcessId: "api-request-example-zeebe",
      elementId: "RequestAccessPoints",
      retries,
      customHeaders,
      variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } },
    });
  const failures = (key: string) => gateway.records({ key, intent: "FAILED" }).map((r) => [r.retries, r.retryBackoff]);

  before(async () => {
    db = await backend("postgres");
    services = createServices(config, db);
    broken = servicesWithDatabaseDown(config, db);
    tenant = randomTenant();
    await seedWorkerTenant(services, db, tenant);
  });
  after(async () => {
    await broken.close();
  });
  beforeEach(async () => {
    gateway = await ZeebeGateway.start();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await gateway.close();
  });

  for (const streamJobs of [false, true]) {
    const how = streamJobs ? "streamed" : "polled";
    it(`${how}: retryBackoff=PT3S fails every try with a 3000 ms back-off, then the incident`, async () => {
      const logs = start(streamJobs);
      const key = job(2, { retryBackoff: "PT3S" });
      expect(await gateway.settle(key, 30_000)).to.equal("incident");
      // Without the header these would be 2000 and 4000 ms (the worker's growing back-off, counted from WORKER_DEFAULT_RETRIES = 3).
      expect(failures(key)).to.deep.equal([
        [1, 3000],
        [0, 3000],
      ]);
      // The stand-in held the job back for the back-off before activating it again.
      expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "FAILED", "RECURRED_AFTER_BACKOFF", "ACTIVATED", "FAILED"]);
      await waitUntil(() => taskLines(logs.entries, "failure UNAVAILABLE").length === 2, "two failures logged");
      expect(logs.entries.filter((e) => e.level === "warn" && String(e.message).includes("retryBackoff"))).to.deep.equal([]);
    });

    it(`${how}: a retryBackoff that is not a duration keeps the default back-off, with a warning naming the task and the value`, async () => {
      const logs = start(streamJobs);
      const key = job(3, { retryBackoff: "3 seconds" });
      await waitUntil(() => failures(key).length === 1, "the job failed once");
      // The worker's first back-off of three retries, as if the header were not there.
      expect(failures(key)).to.deep.equal([[2, 1000]]);
      await waitUntil(() => logs.entries.some((e) => e.level === "warn" && e.taskId === key), "the warning logged");
      const warning = logs.entries.find((e) => e.level === "warn" && e.taskId === key)!;
      expect(warning.message).to.equal("the task's retryBackoff header is not an ISO-8601 duration (for example PT3S, PT1M30S, P1DT2H); the default back-off applies");
      expect(warning).to.include({ engine: "zeebe", header: "retryBackoff", value: "3 seconds", backOffMs: 1000 });
    });
  }

  it("a job without the header keeps the worker's growing back-off", async () => {
    start(false);
    const key = job(2, { other: "header" });
    expect(await gateway.settle(key, 30_000)).to.equal("incident");
    expect(failures(key)).to.deep.equal([
      [1, 2000],
      [0, 4000],
    ]);
  });
});
