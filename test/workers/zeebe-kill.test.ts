import { join } from "node:path";
import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { createServices } from "../../src/services.js";
import { backend, randomTenant } from "../support/backends.js";
import { ENGINE_START_TIMEOUT_MS, ROOT, type RunningProcess } from "../support/process.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { inHandRow, LONG_DEFINITION, processTaskLines, seedWorkerTenant, startWorkerProcess, waitUntil } from "../support/workers.js";
import { ZeebeEngine } from "../support/zeebe.js";

/** A worker process killed with a job in hand (tasks_in_hand), on a real Zeebe broker. */
describe("Zeebe worker processes that end with a job in hand", function () {
  this.timeout(120_000);
  let engine: ZeebeEngine;
  let db: Database;
  let tenant: string;
  const processes: RunningProcess[] = [];
  const startWorker = async () => {
    // The model's retry count, from which the back-offs (1, 2, 4 s) are counted.
    const started = await startWorkerProcess({ ZEEBE_ADDRESS: engine.address, WORKER_DEFAULT_RETRIES: "3" });
    processes.push(started.process);
    return started;
  };

  before(async function () {
    this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
    engine = await ZeebeEngine.shared();
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/api-request-example.bpmn") });
    db = await backend("postgres");
    // A fresh broker numbers its jobs from the same start: rows an interrupted run left would match new jobs
    // (no worker runs between the test files that share the broker).
    await db.knex("tasks_in_hand").where({ engine: "zeebe" }).del();
    tenant = randomTenant();
    await seedWorkerTenant(createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db), db, tenant);
  });
  afterEach(() => processes.splice(0).forEach((p) => p.kill()));

  it("fails a job whose worker was killed running it, one retry fewer at each activation, never running it again, until the incident", async () => {
    const first = await startWorker();
    const { processInstanceKey: key } = await engine.client.createProcessInstance({
      bpmnProcessId: "api-request-example-zeebe",
      variables: { apiDefinitionExternalId: LONG_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } } as never,
    });
    const jobsOf = async (intent: string) => (await engine.records("JOB")).filter((r) => r.recordType === "EVENT" && r.intent === intent && String(r.value.processInstanceKey) === String(key));
    let jobKey = "";
    await waitUntil(async () => (jobKey = String((await jobsOf("CREATED"))[0]?.key ?? "")) !== "", "job created");
    const heldBy = async () => (await inHandRow(db.knex, { engine: "zeebe", taskKey: jobKey }))?.worker_id;
    try {
      await waitUntil(async () => (await heldBy()) === first.workerId, "job recorded in hand by the first worker");
      first.process.kill();
      expect(await first.process.exited).to.equal(null);

      const second = await startWorker();
      // The job times out (2 s), then recurs after each back-off (1 s, 2 s), on the broker's wall clock.
      await waitUntil(async () => (await jobsOf("TIMED_OUT")).length > 0, "job timed out");
      expect(await engine.settle(String(key), 30_000)).to.equal("incident");

      // The model gives the job 3 retries: failed with 2, 1 and 0 left, with back-offs of 1, 2 and 4 s.
      const failed = await jobsOf("FAILED");
      expect(failed.map((r) => r.value.worker)).to.deep.equal([second.workerId, second.workerId, second.workerId]);
      expect(failed.map((r) => [r.value.retries, r.value.retryBackoff])).to.deep.equal([
        [2, 1000],
        [1, 2000],
        [0, 4000],
      ]);
      expect(failed.map((r) => r.value.errorMessage)).to.deep.equal(
        [2, 3, 4].map((n) => `the worker handling this task (${first.workerId}) ended (crash, out of memory or kill) before reporting; attempt ${n}, not run again`),
      );
      const [incident] = await engine.incidents(String(key));
      expect(incident?.value.errorType).to.equal("JOB_NO_RETRIES");
      expect(incident?.value.errorMessage).to.match(/ended \(crash, out of memory or kill\) before reporting; attempt 4/);

      // Not run again: no completion (a run would complete in ~11 s), and the second process
      // took the job three times, reporting a failure each time, and nothing else.
      expect(await jobsOf("COMPLETED")).to.deep.equal([]);
      expect(processTaskLines(second.process.lines).map((l) => [l.taskId, l.outcome])).to.deep.equal(Array.from({ length: 3 }, () => [jobKey, "failure WORKER_ENDED"]));
      await waitUntil(async () => (await heldBy()) === undefined, "row dropped at the incident");
    } finally {
      processes.splice(0).forEach((p) => p.kill());
      await db.knex("tasks_in_hand").where({ engine: "zeebe", task_key: jobKey }).del();
    }
  });
});
