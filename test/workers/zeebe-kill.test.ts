import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { createServices } from "../../src/services.js";
import { backend, randomTenant } from "../support/backends.js";
import type { RunningProcess } from "../support/process.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { inHandRow, LONG_DEFINITION, processTaskLines, seedWorkerTenant, startWorkerProcess, waitUntil } from "../support/workers.js";
import { ZeebeGateway, type JobIntent } from "../support/zeebe-gateway.js";

/** A worker process killed with a job in hand (tasks_in_hand), on the Zeebe gateway stand-in. */
describe("Zeebe worker processes that end with a job in hand", function () {
  this.timeout(120_000);
  let gateway: ZeebeGateway;
  let db: Database;
  let tenant: string;
  const processes: RunningProcess[] = [];
  const startWorker = async () => {
    // The model's retry count, from which the back-offs (1, 2, 4 s) are counted.
    const started = await startWorkerProcess({ ZEEBE_ADDRESS: gateway.address, WORKER_DEFAULT_RETRIES: "3" });
    processes.push(started.process);
    return started;
  };

  before(async () => {
    db = await backend("postgres");
    tenant = randomTenant();
    await seedWorkerTenant(createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db), db, tenant);
    gateway = await ZeebeGateway.start();
  });
  afterEach(() => processes.splice(0).forEach((p) => p.kill()));
  after(() => gateway.close());

  it("fails a job whose worker was killed running it, one retry fewer at each activation, never running it again, until the incident", async () => {
    const first = await startWorker();
    // The job of the example model's service task; the model gives it 3 retries.
    const jobKey = gateway.createJob({
      type: "api-request",
      bpmnProcessId: "api-request-example-zeebe",
      elementId: "RequestAccessPoints",
      retries: 3,
      variables: { apiDefinitionExternalId: LONG_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } },
    });
    const jobsOf = (intent: JobIntent) => gateway.records({ key: jobKey, intent });
    const heldBy = async () => (await inHandRow(db.knex, { engine: "zeebe", taskKey: jobKey }))?.worker_id;
    try {
      await waitUntil(async () => (await heldBy()) === first.workerId, "job recorded in hand by the first worker");
      first.process.kill();
      expect(await first.process.exited).to.equal(null);

      const second = await startWorker();
      // The job times out (2 s), then recurs after each back-off (1 s, 2 s), on the broker's wall clock.
      await waitUntil(() => jobsOf("TIMED_OUT").length > 0, "job timed out");
      expect(await gateway.settle(jobKey, 30_000)).to.equal("incident");

      // The model gives the job 3 retries: failed with 2, 1 and 0 left, with back-offs of 1, 2 and 4 s.
      const failed = jobsOf("FAILED");
      expect(failed.map((r) => r.worker)).to.deep.equal([second.workerId, second.workerId, second.workerId]);
      expect(failed.map((r) => [r.retries, r.retryBackoff])).to.deep.equal([
        [2, 1000],
        [1, 2000],
        [0, 4000],
      ]);
      expect(failed.map((r) => r.errorMessage)).to.deep.equal(
        [2, 3, 4].map((n) => `the worker handling this task (${first.workerId}) ended (crash, out of memory or kill) before reporting; attempt ${n}, not run again`),
      );
      const [incident] = gateway.incidents(jobKey);
      expect(incident?.errorType).to.equal("JOB_NO_RETRIES");
      expect(incident?.errorMessage).to.match(/ended \(crash, out of memory or kill\) before reporting; attempt 4/);

      // Not run again: no completion (a run would complete in ~11 s), and the second process
      // took the job three times, reporting a failure each time, and nothing else.
      expect(jobsOf("COMPLETED")).to.deep.equal([]);
      // Activated by the killed worker, then after the timeout and each back-off by the fresh one.
      expect(jobsOf("ACTIVATED").map((r) => r.worker)).to.deep.equal([first.workerId, second.workerId, second.workerId, second.workerId]);
      // The incident can be raised before the fresh process has logged its acknowledged third failure.
      await waitUntil(() => processTaskLines(second.process.lines).length === 3, "three task lines of the fresh process");
      expect(processTaskLines(second.process.lines).map((l) => [l.taskId, l.outcome])).to.deep.equal(Array.from({ length: 3 }, () => [jobKey, "failure WORKER_ENDED"]));
      await waitUntil(async () => (await heldBy()) === undefined, "row dropped at the incident");
    } finally {
      processes.splice(0).forEach((p) => p.kill());
      await db.knex("tasks_in_hand").where({ engine: "zeebe", task_key: jobKey }).del();
    }
  });
});
