import { randomUUID } from "node:crypto";
import { expect } from "chai";
import type { Database } from "../../src/db/database.js";
import { CAMUNDA7_ENGINES, Camunda7Engine } from "../support/camunda7.js";
import { ENGINE_START_TIMEOUT_MS, type RunningProcess } from "../support/process.js";
import { camunda7WorkerSetup, inHandRow, LONG_DEFINITION, processTaskLines, startWorkerProcess, waitUntil } from "../support/workers.js";

/** Worker processes killed or stopped with a task in hand (tasks_in_hand), on each real engine of the Camunda 7 API. */
for (const kind of CAMUNDA7_ENGINES) {
  describe(`Camunda 7 worker processes that end with a task in hand, on ${kind.name}`, function () {
    this.timeout(120_000);
    let engine: Camunda7Engine;
    let db: Database;
    let tenant: string;
    const processes: RunningProcess[] = [];
    const startWorker = async (env: Record<string, string> = {}) => {
      const started = await startWorkerProcess({ CAMUNDA_URL: engine.baseUrl, CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "1000", ...env });
      processes.push(started.process);
      return started;
    };

    before(async function () {
      this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
      ({ engine, db, tenant } = await camunda7WorkerSetup(kind));
    });
    afterEach(() => processes.splice(0).forEach((p) => p.kill()));
    after(async () => {
      await engine?.stop();
    });

    const startLongTask = () =>
      engine.startInstance("api-request-example", { apiDefinitionExternalId: LONG_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } });
    const taskIdOf = async (instanceId: string) => {
      let taskId: string | undefined;
      await waitUntil(async () => (taskId = (await engine.call<{ id: string }[]>("GET", `/external-task?processInstanceId=${instanceId}`))[0]?.id) !== undefined, "external task created");
      return taskId!;
    };
    const cleanUp = async (instanceId: string, taskKey: string) => {
      processes.splice(0).forEach((p) => p.kill());
      await engine.call("DELETE", `/process-instance/${instanceId}`);
      await db.knex("tasks_in_hand").where({ engine: "camunda7", task_key: taskKey }).del();
    };
    const heldBy = async (taskKey: string) => (await inHandRow(db.knex, { engine: "camunda7", taskKey }))?.worker_id;

    it("fails a task whose worker was killed running it, one retry fewer at each fetch, never running it again, until the incident", async () => {
      const first = await startWorker();
      const id = await startLongTask();
      const taskId = await taskIdOf(id);
      try {
        await waitUntil(async () => (await heldBy(taskId)) === first.workerId, "task recorded in hand by the first worker");
        first.process.kill();
        expect(await first.process.exited).to.equal(null);

        // The lock (2 s) expires; a fresh process fetches the task twice (WORKER_DEFAULT_RETRIES=2).
        const second = await startWorker();
        expect(await engine.settle(id, 60_000)).to.equal("incident");
        const failures = await engine.call<{ workerId: string; retries: number | null; errorMessage: string }[]>(
          "GET",
          `/history/external-task-log?processInstanceId=${id}&failureLog=true&sortBy=timestamp&sortOrder=asc`,
        );
        // Logged with the retries the task had then: none set (the default 2 applies), then 1; 0 after the last.
        expect(failures.map((f) => [f.workerId, f.retries])).to.deep.equal([
          [second.workerId, null],
          [second.workerId, 1],
        ]);
        expect(failures.map((f) => f.errorMessage)).to.deep.equal([2, 3].map((n) => `the worker handling this task (${first.workerId}) ended (crash, out of memory or kill) before reporting; attempt ${n}, not run again`));
        const [task] = await engine.call<{ retries: number; errorMessage: string }[]>("GET", `/external-task?processInstanceId=${id}`);
        expect(task?.retries).to.equal(0);
        const [incident] = await engine.call<{ incidentType: string; incidentMessage: string }[]>("GET", `/incident?processInstanceId=${id}`);
        expect(incident?.incidentType).to.equal("failedExternalTask");
        expect(incident?.incidentMessage).to.match(/ended \(crash, out of memory or kill\) before reporting; attempt 3/);

        // Not run again: the engine saw no completion (a run would complete in ~11 s), and the second
        // process took the task twice, reporting a failure each time, and nothing else.
        expect(await engine.call("GET", `/history/external-task-log?processInstanceId=${id}&successLog=true`)).to.deep.equal([]);
        expect((await engine.call<{ state: string }>("GET", `/history/process-instance/${id}`)).state).to.equal("ACTIVE");
        const ran = processTaskLines(second.process.lines);
        expect(ran.map((l) => [l.taskId, l.outcome])).to.deep.equal([
          [taskId, "failure WORKER_ENDED"],
          [taskId, "failure WORKER_ENDED"],
        ]);
        // At the incident the row goes: an operator who retries the task has it run afresh.
        await waitUntil(async () => (await heldBy(taskId)) === undefined, "row dropped at the incident");
      } finally {
        await cleanUp(id, taskId);
      }
    });

    it("drops the rows older than 7 days when the workers start", async () => {
      const [stale, fresh] = [randomUUID(), randomUUID()];
      await db.knex("tasks_in_hand").insert([
        { engine: "camunda7", task_key: stale, worker_id: "gone", topic: "api-request", started_at: new Date(Date.now() - 8 * 24 * 3600 * 1000) },
        { engine: "camunda7", task_key: fresh, worker_id: "gone", topic: "api-request", started_at: new Date(Date.now() - 6 * 24 * 3600 * 1000) },
      ]);
      try {
        await startWorker();
        expect(await heldBy(stale)).to.equal(undefined);
        expect(await heldBy(fresh)).to.equal("gone");
      } finally {
        await db.knex("tasks_in_hand").whereIn("task_key", [stale, fresh]).del();
      }
    });

    it("drops the rows of its tasks in hand when a shutdown passes its deadline, so the next worker runs them", async () => {
      const first = await startWorker({ SHUTDOWN_TIMEOUT_MS: "1500" });
      const id = await startLongTask();
      const taskId = await taskIdOf(id);
      try {
        await waitUntil(async () => (await heldBy(taskId)) === first.workerId, "task recorded in hand");
        first.process.child.kill("SIGTERM");
        expect(await first.process.exited).to.equal(1);
        expect(await heldBy(taskId)).to.equal(undefined);
        // The next process runs it (its own row), rather than failing it as a task that ended a worker.
        const second = await startWorker();
        await waitUntil(async () => (await heldBy(taskId)) === second.workerId, "task run by the next worker");
        expect(second.process.lines.filter((l) => l.includes("WORKER_ENDED"))).to.deep.equal([]);
      } finally {
        await cleanUp(id, taskId);
      }
    });
  });
}
