import { randomUUID } from "node:crypto";
import { expect } from "chai";
import knexFactory from "knex";
import { ProblemError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { describeReport, inHandWorkerId, takeTask, WORKER_ENDED, type TakeOptions } from "../../src/tasks/take.js";
import { describeEachBackend } from "../support/backends.js";
import { inHandRow as rowOf } from "../support/workers.js";

describeEachBackend("taking a task", (ctx) => {
  const logger = createLogger("silent");
  const options = (workerId: string, knex = ctx.db.knex): TakeOptions => ({ knex, engine: "zeebe", workerId, defaultRetries: 3, logger });
  const ran: string[] = [];
  const run = (output: Record<string, unknown> = { result: 1 }) => async () => {
    ran.push("ran");
    return output;
  };
  const keys: string[] = [];
  const newKey = () => {
    keys.push(randomUUID());
    return keys.at(-1)!;
  };
  beforeEach(() => ran.splice(0));
  after(() => ctx.db.knex("tasks_in_hand").whereIn("task_key", keys.splice(0)).del());

  it("runs a task no process had in hand and releases its row once settled", async () => {
    const task = { key: newKey(), topic: "api-request", retries: 3 };
    const handled = await takeTask(options("w1"), task, run());
    expect(handled.report).to.deep.equal({ kind: "completed", output: { result: 1 } });
    expect((await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key }))?.worker_id).to.equal("w1");
    await handled.settle(true);
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.equal(undefined);
    expect(ran).to.deep.equal(["ran"]);
  });

  it("releases the row of a task run but not reported: the process survived it", async () => {
    const task = { key: newKey(), topic: "api-request", retries: 3 };
    await (await takeTask(options("w1"), task, run())).settle(false);
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.equal(undefined);
  });

  it("settles a take late without dropping the row of a later take of the same task: that run keeps its row", async () => {
    const task = { key: newKey(), topic: "api-request", retries: 3 };
    const earlier = await takeTask(options("w1"), task, run());
    // The job activated again and taken by the same process before the earlier take was settled.
    const later = await takeTask(options("w1"), task, run());
    expect(ran).to.deep.equal(["ran", "ran"]);
    await earlier.settle(true);
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.deep.include({ worker_id: "w1", attempts: 2 });
    await later.settle(true);
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.equal(undefined);
  });

  it("turns a 4xx problem into a BPMN error and anything else into a failure with one retry fewer", async () => {
    const missing = await takeTask(options("w1"), { key: newKey(), topic: "t", retries: 3 }, () => Promise.reject(new ProblemError("API_DEFINITION_NOT_FOUND", "no such definition")));
    expect(missing.report).to.deep.equal({ kind: "bpmnError", code: "API_DEFINITION_NOT_FOUND", message: "no such definition" });
    const bug = await takeTask(options("w1"), { key: newKey(), topic: "t", retries: null }, () => Promise.reject(new Error("boom")));
    expect(bug.report).to.include({ kind: "failure", code: "INTERNAL_ERROR", retries: 2, backOffMs: 1000 });
    expect(describeReport(bug.report)).to.deep.equal({ kind: "failure", code: "INTERNAL_ERROR", outcome: "failure INTERNAL_ERROR" });
  });

  it("does not run a task another process ended with in hand: a failure, one retry fewer at each meeting, then its row is dropped", async () => {
    const task = { key: newKey(), topic: "api-request" };
    await takeTask(options("dead-worker"), { ...task, retries: 3 }, run());
    ran.splice(0);

    const first = await takeTask(options("w2"), { ...task, retries: 3 }, run());
    expect(first.report).to.include({ kind: "failure", code: WORKER_ENDED, retries: 2, backOffMs: 1000 });
    expect(first.report.kind === "failure" && first.report.message).to.equal(
      "the worker handling this task (dead-worker) ended (crash, out of memory or kill) before reporting; attempt 2, not run again",
    );
    await first.settle(true);
    // Met again, by the same process: still not run, the count goes on.
    const second = await takeTask(options("w2"), { ...task, retries: 2 }, run());
    expect(second.report).to.include({ kind: "failure", code: WORKER_ENDED, retries: 1, backOffMs: 2000 });
    expect(second.report.kind === "failure" && second.report.message).to.match(/attempt 3, not run again$/);
    await second.settle(true);
    const last = await takeTask(options("w3"), { ...task, retries: 1 }, run());
    expect(last.report).to.include({ kind: "failure", code: WORKER_ENDED, retries: 0 });
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.deep.include({ worker_id: "dead-worker", attempts: 4 });
    await last.settle(true);
    // The incident is the operator's: a task retried from it runs afresh.
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.equal(undefined);
    expect(ran).to.deep.equal([]);
  });

  it("keeps the row of a task whose last failure did not reach the engine", async () => {
    const task = { key: newKey(), topic: "api-request" };
    await takeTask(options("dead-worker"), { ...task, retries: 1 }, run());
    const met = await takeTask(options("w2"), { ...task, retries: 1 }, run());
    expect(met.report).to.include({ kind: "failure", retries: 0 });
    await met.settle(false);
    expect(await rowOf(ctx.db.knex, { engine: "zeebe", taskKey: task.key })).to.deep.include({ worker_id: "dead-worker" });
  });

  it("does not run a task it cannot record: the database being down is a passing fault, failed with one retry fewer", async () => {
    const down = knexFactory({ client: "pg", connection: "postgres://postgres@127.0.0.1:1/test", acquireConnectionTimeout: 500, log: { warn: () => {}, error: () => {} } });
    try {
      const handled = await takeTask(options("w1", down), { key: newKey(), topic: "api-request", retries: 2 }, run());
      expect(handled.report).to.include({ kind: "failure", code: "UNAVAILABLE", retries: 1, backOffMs: 2000 });
      await handled.settle(true);
      expect(ran).to.deep.equal([]);
    } finally {
      await down.destroy();
    }
  });
});

describe("in-hand worker id", () => {
  it("is the engine's worker id, unique per process, or a configured id made unique", () => {
    expect(inHandWorkerId("host-1-abcd1234", false)).to.equal("host-1-abcd1234");
    const a = inHandWorkerId("worker-1", true);
    expect(a).to.match(/^worker-1-[0-9a-f]{8}$/);
    expect(inHandWorkerId("worker-1", true)).to.not.equal(a);
  });
});
