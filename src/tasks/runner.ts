import type { Span } from "@opentelemetry/api";
import type { Knex } from "knex";
import type { Logger } from "../logger.js";
import type { TaskMetrics } from "../metrics.js";
import type { Services } from "../services.js";
import type { EngineName } from "./in-hand.js";
import { defaultWorkerId } from "./outcome.js";
import { describeReport, failureReport, inHandWorkerId, takeTask, UNREPORTED, type Handled, type TaskReport, type TakeOptions } from "./take.js";
import type { OutputVariables, TaskContext } from "./tasks.js";
import { inTaskScope } from "./task-scope.js";
import { errorText } from "../errors.js";

/** An engine-neutral task (tasks.ts): the variables in, the output variables out. */
export type TaskHandler = (services: Services, variables: Record<string, unknown>, context: TaskContext) => Promise<OutputVariables>;

/** A worker as the service sees it, whatever its engine. */
export interface RunningWorker {
  readonly engine: EngineName;
  readonly workerId: string;
  /** The id its tasks in hand are recorded under (`tasks_in_hand.worker_id`), unique per process. */
  readonly inHandId: string;
  /** Resolves when the engine answers; rejects saying why not (the readiness check). */
  check(): Promise<void>;
  /** Stops fetching, lets the fetch in progress and the tasks in hand finish. */
  stop(): Promise<void>;
}

/** A failure to report, with one retry fewer and its back-off. */
export type FailureReport = TaskReport & { kind: "failure" };

/**
 * How a transport tells its engine the one outcome of a task: what is specific to a client library.
 * Each method resolves once the engine took the report and rejects when it could not be made.
 */
export interface TaskReporter {
  complete(output: OutputVariables): Promise<void>;
  bpmnError(code: string, message: string): Promise<void>;
  fail(failure: FailureReport): Promise<void>;
}

/**
 * Thrown by {@link TaskReporter.complete} when the engine answered and refused the completion
 * (e.g. the model's next gateway fails on the result): the task is then failed, counted down to an
 * incident, rather than handed out again at every lock expiry.
 */
export class CompletionRefused extends Error {
  constructor(reason: string) {
    super(`the engine refused the completion: ${reason}`);
    this.name = "CompletionRefused";
  }
}

/** A task as the engine handed it out. */
export interface EngineTask {
  /** Camunda 7 external task id, Zeebe job key. */
  key: string;
  /** The topic (Camunda 7) or job type (Zeebe) it came from. */
  topic: string;
  /** The retries the engine gives it; none on Camunda 7 before its first failure. */
  retries: number | null | undefined;
  variables: Record<string, unknown>;
  /** The engine's tenant of the task; none when the engine has no tenants. */
  tenant: string | null | undefined;
  /** How it reached the worker when there is more than one way (Zeebe with streaming: `stream` or `poll`); logged in the task line. */
  via?: string;
  /** Camunda 7 process instance id, Zeebe process instance key: on the task's log lines and span. */
  processInstanceKey?: string | undefined;
  /** The BPMN process id (Camunda 7: the process definition key): on the task's log lines and span. */
  bpmnProcessId?: string | undefined;
}

export interface TaskRunnerOptions {
  engine: EngineName;
  services: Services;
  /** Where `tasks_in_hand` lives. */
  database: Knex;
  /** A configured worker id; default `<host>-<pid>-<random>`. */
  workerId: string | undefined;
  defaultRetries: number;
  logger: Logger;
  metrics?: TaskMetrics | undefined;
  /** The error line when a report could not be made: what becomes of the task then. */
  unreportedMessage: string;
}

/** What a worker is given besides its settings: where tasks in hand are recorded, the log and the metrics. */
export type WorkerDeps = Pick<TaskRunnerOptions, "database" | "logger" | "metrics">;

/**
 * The steps every task takes, whatever its engine: counted as fetched, recorded in hand and run
 * (take.ts), exactly one report — completed, a BPMN error (a 4xx problem) or a failure with one
 * retry fewer and a growing back-off — then its row settled, counted by outcome and logged in one
 * `task` line. A report that cannot be made is logged and counted `unreported`: the engine hands
 * the task out again when its lock or job timeout lapses. The runner never throws.
 */
export class TaskRunner {
  readonly workerId: string;
  readonly inHandId: string;
  private readonly take: TakeOptions;

  constructor(private readonly options: TaskRunnerOptions) {
    this.workerId = options.workerId ?? defaultWorkerId();
    this.inHandId = inHandWorkerId(this.workerId, options.workerId !== undefined);
    this.take = { knex: options.database, engine: options.engine, workerId: this.inHandId, defaultRetries: options.defaultRetries, logger: options.logger };
  }

  /** Runs one task through `handler` and reports its outcome through `reporter`; resolves to whether the report was made. */
  run(task: EngineTask, handler: TaskHandler, reporter: TaskReporter): Promise<boolean> {
    return inTaskScope({ ...task, engine: this.options.engine }, (span) => this.runInScope(task, handler, reporter, span));
  }

  private async runInScope(task: EngineTask, handler: TaskHandler, reporter: TaskReporter, span: Span): Promise<boolean> {
    const { engine, logger, metrics } = this.options;
    const started = performance.now();
    metrics?.fetched(engine, task.topic);
    let handled: Handled | undefined;
    let view = UNREPORTED;
    let reported = false;
    // Where a task's time goes: taking and running it (ours), then the engine taking the report.
    let ran: number | undefined;
    let answered: number | undefined;
    try {
      handled = await takeTask(this.take, { key: task.key, topic: task.topic, retries: task.retries }, () =>
        handler(this.options.services, task.variables, { tenant: task.tenant }),
      );
      ran = performance.now();
      view = await this.report(task, handled.report, reporter);
      answered = performance.now();
      reported = true;
    } catch (err) {
      view = UNREPORTED;
      logger.error(this.options.unreportedMessage, { engine, topic: task.topic, taskId: task.key, error: errorText(err) });
    } finally {
      await handled?.settle(reported);
      metrics?.finished(engine, task.topic, view.kind, view.code, (performance.now() - started) / 1000);
      span.setAttribute("task.outcome", view.outcome);
      logger.info("task", {
        engine,
        topic: task.topic,
        taskId: task.key,
        tenant: (typeof task.variables.tenantId === "string" ? task.variables.tenantId : task.tenant) ?? null,
        outcome: view.outcome,
        retries: task.retries ?? null,
        durationMs: Math.round(performance.now() - started),
        runMs: ran === undefined ? null : Math.round(ran - started),
        reportMs: ran === undefined || answered === undefined ? null : Math.round(answered - ran),
        ...(task.via !== undefined ? { via: task.via } : {}),
      });
    }
    return reported;
  }

  /** Exactly one report per task; a refused completion becomes a failure. Answers the view of what was reported. */
  private async report(task: EngineTask, report: TaskReport, reporter: TaskReporter) {
    if (report.kind === "bpmnError") await reporter.bpmnError(report.code, report.message);
    else if (report.kind === "failure") await reporter.fail(report);
    else {
      try {
        await reporter.complete(report.output);
      } catch (err) {
        if (!(err instanceof CompletionRefused)) throw err;
        const refused = failureReport("COMPLETION_REFUSED", err.message, err.message, task.retries, this.options.defaultRetries);
        await reporter.fail(refused);
        return describeReport(refused);
      }
    }
    return describeReport(report);
  }
}
