import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { ProblemError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import { takeInHand } from "../../src/tasks/in-hand.js";
import { CompletionRefused, TaskRunner, type EngineTask, type FailureReport, type TaskHandler, type TaskReporter } from "../../src/tasks/runner.js";
import type { OutputVariables } from "../../src/tasks/tasks.js";
import { WORKER_ENDED } from "../../src/tasks/take.js";
import { WorkerState } from "../../src/tasks/worker-state.js";
import { describeEachBackend } from "../support/backends.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { inHandRow } from "../support/workers.js";

/** A reporter that records each report it is asked to make; `refuse` makes a report throw instead. */
class RecordingReporter implements TaskReporter {
  readonly calls: ({ kind: "complete"; output: OutputVariables } | { kind: "bpmnError"; code: string; message: string } | { kind: "fail"; failure: FailureReport })[] = [];
  constructor(private readonly refuse: Partial<Record<"complete" | "bpmnError" | "fail", Error>> = {}) {}

  async complete(output: OutputVariables): Promise<void> {
    this.calls.push({ kind: "complete", output });
    if (this.refuse.complete) throw this.refuse.complete;
  }
  async bpmnError(code: string, message: string): Promise<void> {
    this.calls.push({ kind: "bpmnError", code, message });
    if (this.refuse.bpmnError) throw this.refuse.bpmnError;
  }
  async fail(failure: FailureReport): Promise<void> {
    this.calls.push({ kind: "fail", failure });
    if (this.refuse.fail) throw this.refuse.fail;
  }
}

describeEachBackend("the task runner", (ctx) => {
  const UNREPORTED = "could not report: the engine hands the task out again";
  let services: Services;
  let logs: MemoryTransport;
  let metrics: Metrics;
  const keys: string[] = [];
  const runner = (workerId?: string) =>
    new TaskRunner({ engine: "zeebe", services, database: ctx.db.knex, workerId, defaultRetries: 3, logger: createLogger("info", [logs]), metrics, unreportedMessage: UNREPORTED });
  const task = (overrides: Partial<EngineTask> = {}): EngineTask => {
    keys.push(randomUUID());
    return { key: keys.at(-1)!, topic: "api-request", retries: 3, variables: {}, tenant: "acme", ...overrides };
  };
  const answering = (output: OutputVariables): TaskHandler => async () => output;
  const throwing = (err: unknown): TaskHandler => async () => {
    throw err;
  };
  const taskLines = () => logs.entries.filter((e) => e.message === "task");
  const counted = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values.map((v) => ({ labels: v.labels, value: v.value }));

  beforeEach(() => {
    services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), ctx.db);
    logs = new MemoryTransport();
    metrics = new Metrics();
  });
  after(() => ctx.db.knex("tasks_in_hand").whereIn("task_key", keys.splice(0)).del());

  it("completes a task with the handler's output, counts and logs it once, and drops its row", async () => {
    const seen: unknown[] = [];
    const handler: TaskHandler = async (s, variables, context) => {
      seen.push(s === services, variables, context);
      return { result: { n: 1 } };
    };
    const reporter = new RecordingReporter();
    const t = task({ variables: { a: 1 }, retries: null });
    expect(await runner().run(t, handler, reporter)).to.equal(true);
    expect(seen).to.deep.equal([true, { a: 1 }, { tenant: "acme" }]);
    expect(reporter.calls).to.deep.equal([{ kind: "complete", output: { result: { n: 1 } } }]);
    expect(await counted("tasks_fetched_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request" }, value: 1 }]);
    expect(await counted("tasks_completed_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request" }, value: 1 }]);
    expect(taskLines()).to.have.length(1);
    expect(taskLines()[0]).to.deep.include({ level: "info", engine: "zeebe", topic: "api-request", taskId: t.key, tenant: "acme", outcome: "completed", retries: null });
    expect(taskLines()[0]!.durationMs).to.be.a("number");
    expect(await inHandRow(ctx.db.knex, { engine: "zeebe", taskKey: t.key })).to.equal(undefined);
  });

  it("says in the task line how long taking and running the task took and how long the engine took the report", async () => {
    const slowReport = new RecordingReporter();
    const complete = slowReport.complete.bind(slowReport);
    slowReport.complete = async (output) => {
      await new Promise((r) => setTimeout(r, 60));
      await complete(output);
    };
    const slowRun: TaskHandler = async () => {
      await new Promise((r) => setTimeout(r, 40));
      return { result: 1 };
    };
    await runner().run(task(), slowRun, slowReport);
    const line = taskLines()[0] as { runMs: number; reportMs: number; durationMs: number };
    expect(line.runMs).to.be.at.least(39);
    expect(line.reportMs).to.be.at.least(59);
    expect(line.durationMs).to.be.at.least(line.runMs + line.reportMs - 1);
    // A report that could not be made has no report time.
    const failing = new RecordingReporter({ complete: new Error("engine unreachable") });
    await runner().run(task(), answering({ result: 1 }), failing);
    expect(taskLines()[1]).to.deep.include({ outcome: "unreported", reportMs: null });
    expect((taskLines()[1] as { runMs: unknown }).runMs).to.be.a("number");
  });

  it("logs the tenant of the tenantId variable before the engine's", async () => {
    await runner().run(task({ variables: { tenantId: "globex" }, tenant: "acme" }), answering({ result: 1 }), new RecordingReporter());
    await runner().run(task({ tenant: undefined }), answering({ result: 1 }), new RecordingReporter());
    expect(taskLines().map((l) => l.tenant)).to.deep.equal(["globex", null]);
  });

  it("reports a 4xx problem as a BPMN error carrying its code, counted by code", async () => {
    const reporter = new RecordingReporter();
    await runner().run(task(), throwing(new ProblemError("API_DEFINITION_NOT_FOUND", "no such definition")), reporter);
    expect(reporter.calls).to.deep.equal([{ kind: "bpmnError", code: "API_DEFINITION_NOT_FOUND", message: "no such definition" }]);
    expect(await counted("tasks_bpmn_errors_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request", code: "API_DEFINITION_NOT_FOUND" }, value: 1 }]);
    expect(taskLines()[0]).to.include({ outcome: "bpmnError API_DEFINITION_NOT_FOUND" });
  });

  it("fails anything else with one retry fewer and a doubling back-off, from the default when the engine gives none", async () => {
    const reporter = new RecordingReporter();
    for (const retries of [null, 2, 1, 0]) await runner().run(task({ retries }), throwing(new TypeError("a bug")), reporter);
    const failures = reporter.calls.map((c) => (c.kind === "fail" ? c.failure : undefined));
    expect(failures.map((f) => [f?.code, f?.retries, f?.backOffMs])).to.deep.equal([
      ["INTERNAL_ERROR", 2, 1000],
      ["INTERNAL_ERROR", 1, 2000],
      ["INTERNAL_ERROR", 0, 4000],
      ["INTERNAL_ERROR", 0, 4000],
    ]);
    // The engine's incident shows the stack; the message is what a caller of the REST API would read.
    expect(failures[0]?.details).to.match(/^TypeError: a bug\n\s+at /);
    expect(failures[0]?.message).to.not.include("a bug");
    expect(await counted("tasks_failures_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request", code: "INTERNAL_ERROR" }, value: 4 }]);
    expect(taskLines().map((l) => [l.outcome, l.retries])).to.deep.equal([
      ["failure INTERNAL_ERROR", null],
      ["failure INTERNAL_ERROR", 2],
      ["failure INTERNAL_ERROR", 1],
      ["failure INTERNAL_ERROR", 0],
    ]);
  });

  it("turns a completion the engine refuses into a failure counted down like any other", async () => {
    const reporter = new RecordingReporter({ complete: new CompletionRefused("the gateway's condition failed") });
    expect(await runner().run(task({ retries: 2 }), answering({ result: 1 }), reporter)).to.equal(true);
    expect(reporter.calls.map((c) => c.kind)).to.deep.equal(["complete", "fail"]);
    const failure = (reporter.calls[1] as { failure: FailureReport }).failure;
    expect(failure).to.include({ code: "COMPLETION_REFUSED", message: "the engine refused the completion: the gateway's condition failed", retries: 1, backOffMs: 2000 });
    expect(await counted("tasks_completed_total")).to.deep.equal([]);
    expect(await counted("tasks_failures_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request", code: "COMPLETION_REFUSED" }, value: 1 }]);
    expect(taskLines()[0]).to.include({ outcome: "failure COMPLETION_REFUSED" });
  });

  it("when a report cannot be made: logs it as an error, counts the task unreported, never throws, and drops its row", async () => {
    for (const [refuse, handler] of [
      [{ complete: new Error("socket hang up") }, answering({ result: 1 })],
      [{ bpmnError: new Error("socket hang up") }, throwing(new ProblemError("INVALID_REQUEST", "bad"))],
      [{ fail: new Error("socket hang up") }, throwing(new Error("down"))],
      // A refused completion whose failure cannot be reported either.
      [{ complete: new CompletionRefused("no"), fail: new Error("socket hang up") }, answering({ result: 1 })],
    ] as const) {
      const t = task();
      expect(await runner().run(t, handler, new RecordingReporter(refuse))).to.equal(false);
      expect(await inHandRow(ctx.db.knex, { engine: "zeebe", taskKey: t.key })).to.equal(undefined);
    }
    const errors = logs.entries.filter((e) => e.level === "error");
    expect(errors.map((e) => [e.message, e.error])).to.deep.equal(Array.from({ length: 4 }, () => [UNREPORTED, "socket hang up"]));
    expect(errors[0]).to.include({ engine: "zeebe", topic: "api-request" });
    expect(taskLines().map((l) => l.outcome)).to.deep.equal(["unreported", "unreported", "unreported", "unreported"]);
    expect(await counted("tasks_unreported_total")).to.deep.equal([{ labels: { engine: "zeebe", topic: "api-request" }, value: 4 }]);
    expect(await counted("tasks_completed_total")).to.deep.equal([]);
    expect(await counted("tasks_failures_total")).to.deep.equal([]);
  });

  it("does not run a task another process ended with in hand: fails it WORKER_ENDED, and drops its row at the incident", async () => {
    const t = task({ retries: 1 });
    await takeInHand(ctx.db.knex, { engine: "zeebe", taskKey: t.key, topic: t.topic, workerId: "ended-process" });
    let ran = false;
    const reporter = new RecordingReporter();
    await runner("fresh").run(t, async () => ((ran = true), { result: 1 }), reporter);
    expect(ran).to.equal(false);
    expect(reporter.calls).to.have.length(1);
    expect((reporter.calls[0] as { failure: FailureReport }).failure).to.include({ code: WORKER_ENDED, retries: 0 });
    expect(taskLines()[0]).to.include({ outcome: `failure ${WORKER_ENDED}` });
    expect(await inHandRow(ctx.db.knex, { engine: "zeebe", taskKey: t.key })).to.equal(undefined);
  });

  it("names itself: a configured worker id gets a random suffix in tasks_in_hand, a default one is unique already", () => {
    const configured = runner("w1");
    expect(configured.workerId).to.equal("w1");
    expect(configured.inHandId).to.match(/^w1-[0-9a-f]{8}$/);
    const own = runner();
    expect(own.inHandId).to.equal(own.workerId);
    expect(own.workerId).to.not.equal(runner().workerId);
  });
});

describe("a worker's state", () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it("is idle at stop only once the fetch under way and every task in hand have ended", async () => {
    const state = new WorkerState();
    state.pollStarted(true);
    state.taskStarted();
    let idle = false;
    void state.stop().then(() => (idle = true));
    expect(state.stopping).to.equal(true);
    state.pollEnded();
    await turn();
    await turn();
    expect(idle).to.equal(false);
    state.taskEnded();
    await turn();
    expect(idle).to.equal(true);
  });

  it("counts a poll that asks for nothing (every slot taken) as no fetch under way", async () => {
    const state = new WorkerState();
    state.pollStarted(false);
    expect(state.polling).to.equal(false);
    let idle = false;
    void state.stop().then(() => (idle = true));
    await turn();
    expect(idle).to.equal(true);
  });

  it("says which failure starts an outage and how many tries it took when the engine answers again", () => {
    const state = new WorkerState();
    expect(state.reachable()).to.equal(0);
    expect([state.unreachable(), state.unreachable(), state.unreachable()]).to.deep.equal([true, false, false]);
    expect(state.failedTries).to.equal(3);
    expect(state.reachable()).to.equal(3);
    expect(state.unreachable()).to.equal(true);
  });

  it("ends a back-off pause when the worker stops, and pauses no more after", async () => {
    const state = new WorkerState();
    let woke = false;
    const pause = state.pause(600_000).then(() => (woke = true));
    await turn();
    expect(woke).to.equal(false);
    await state.stop();
    await pause;
    expect(woke).to.equal(true);
    await state.pause(600_000);
  });
});
