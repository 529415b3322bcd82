import { Client, Variables, type Task, type TaskService } from "camunda-external-task-client-js";
import type { Knex } from "knex";
import type { Logger } from "../../src/logger.js";
import type { TaskMetrics } from "../../src/metrics.js";
import type { Services } from "../../src/services.js";
import { defaultWorkerId, reconnectDelayMs } from "../../src/tasks/outcome.js";
import { describeReport, failureReport, inHandWorkerId, takeTask, UNREPORTED, type Handled, type TaskReport } from "../../src/tasks/take.js";
import { apiRequest, calculateSeries, type OutputVariables, type TaskContext } from "../../src/tasks/tasks.js";

/** Settings of the Camunda 7 external-task worker. */
export interface Camunda7WorkerOptions {
  /** Camunda 7 REST base, e.g. http://localhost:8080/engine-rest. */
  baseUrl: string;
  /** Where the tasks in hand are recorded (`tasks_in_hand`), so a task that ends the process is not run for ever. */
  database: Knex;
  /** Unique per process; default `<host>-<pid>-<random>`. */
  workerId?: string;
  /** Topic names; default `api-request` and `calculate-series`. */
  topics?: { apiRequest?: string; calculateSeries?: string };
  /** Most tasks in hand at once (a fetch asks for the free slots only). Default 10. */
  maxTasks?: number;
  /** How long a fetched task stays locked to this worker; extended while it runs. Default 30 s. */
  lockDurationMs?: number;
  /** Long-polling wait of one fetch. Default 10 s. */
  asyncResponseTimeoutMs?: number;
  /** Retries of a task that has none set yet. Default 3. */
  defaultRetries?: number;
}

export interface RunningWorker {
  readonly engine: "camunda7" | "zeebe";
  readonly workerId: string;
  /** The id its tasks in hand are recorded under (`tasks_in_hand.worker_id`), unique per process. */
  readonly inHandId: string;
  /** Resolves when the engine answers; rejects saying why not (the readiness check). */
  check(): Promise<void>;
  /** Stops fetching, lets the fetch in progress and the tasks in hand finish. */
  stop(): Promise<void>;
}

type Handler = (services: Services, variables: Record<string, unknown>, context: TaskContext) => Promise<OutputVariables>;

/**
 * Subscribes to the two topics and runs each task through the engine-neutral task functions.
 * Every task taken is always completed, or reported as a BPMN error (a 4xx problem) or as a
 * failure with decreasing retries and a growing back-off; if even the report fails, the lock
 * simply expires and the engine hands the task out again — it is never left silently locked.
 * A task is recorded in hand before it runs; one a process ended with is failed, not run (take.ts).
 */
export function startCamunda7Worker(services: Services, options: Camunda7WorkerOptions, logger: Logger, metrics?: TaskMetrics): RunningWorker {
  const workerId = options.workerId ?? defaultWorkerId();
  const inHandId = inHandWorkerId(workerId, options.workerId !== undefined);
  const lockDuration = options.lockDurationMs ?? 30_000;
  const defaultRetries = options.defaultRetries ?? 3;
  const take = { knex: options.database, engine: "camunda7" as const, workerId: inHandId, defaultRetries, logger };
  const maxTasks = options.maxTasks ?? 10;
  const client = new Client({
    baseUrl: options.baseUrl,
    workerId,
    maxTasks,
    // maxTasks bounds the tasks in hand, not only one fetch: a fetch asks for the free slots only.
    maxParallelExecutions: maxTasks,
    lockDuration,
    asyncResponseTimeout: options.asyncResponseTimeoutMs ?? 10_000,
    // The next fetch follows the last at once: long polling keeps an idle worker from spinning,
    // and an unreachable engine is retried with the back-off below, not at this pace.
    interval: 20,
    autoPoll: false,
    use: () => {},
  });
  let inFlight = 0;
  let polling = false;
  const idle: (() => void)[] = [];
  const settle = () => {
    if (inFlight === 0 && !polling) idle.splice(0).forEach((resolve) => resolve());
  };
  // The client announces a poll even when every slot is taken and it fetches nothing (and then
  // says nothing more): only a poll with a free slot is a fetch in progress.
  client.on("poll:start", () => (polling = inFlight < maxTasks));
  client.on("poll:success", () => {
    polling = false;
    // The fetched tasks start right after this event: settle once their handlers have counted them.
    setImmediate(settle);
  });
  let pollErrors = 0;
  let stopping = false;
  client.on("poll:error", (err: unknown) => {
    polling = false;
    // A lost engine connection: said once per outage, retried with an exponential back-off (0.5 s … 30 s).
    if (pollErrors++ === 0) logger.warn("camunda 7 unreachable; retrying", { engine: "camunda7", workerId, error: err instanceof Error ? err.message : String(err) });
    if (!stopping) {
      client.stop();
      setTimeout(() => {
        if (!stopping) client.start();
      }, reconnectDelayMs(pollErrors - 1)).unref();
    }
    settle();
  });
  client.on("poll:success", () => {
    if (pollErrors > 0) logger.info("camunda 7 reachable again", { engine: "camunda7", workerId, failedPolls: pollErrors });
    pollErrors = 0;
  });

  const subscribe = (topic: string, handler: Handler) =>
    client.subscribe(topic, { lockDuration }, async ({ task, taskService }: { task: Task; taskService: TaskService }) => {
      inFlight++;
      const started = performance.now();
      metrics?.fetched("camunda7", topic);
      // A task that runs long keeps its lock: extended three times per lock duration, so one slow
      // extension round trip does not let the lock lapse.
      // Once the outcome is being reported, an extension racing the report would only meet a task
      // the engine has just closed (404): neither sent nor logged.
      let reporting = false;
      const keepLocked = setInterval(() => {
        if (reporting) return;
        taskService.extendLock(task, lockDuration).catch((err: unknown) => {
          if (!reporting) logger.warn("lock extension failed", { engine: "camunda7", taskId: task.id, error: String(err) });
        });
      }, Math.max(100, lockDuration / 3));
      const variables = task.variables.getAll() as Record<string, unknown>;
      const tenant = (typeof variables.tenantId === "string" ? variables.tenantId : null) ?? task.tenantId ?? null;
      const fail = (failure: TaskReport & { kind: "failure" }) =>
        // The engine keeps at most 666 characters of the message (the details are unbounded).
        taskService.handleFailure(task, { errorMessage: failure.message.slice(0, 600), errorDetails: failure.details, retries: failure.retries, retryTimeout: failure.backOffMs });
      let handled: Handled | undefined;
      let view = UNREPORTED;
      let reported = false;
      try {
        handled = await takeTask(take, { key: task.id, topic, retries: task.retries }, () => handler(services, variables, { tenant: task.tenantId }));
        reporting = true;
        clearInterval(keepLocked);
        // Exactly one report per task: complete, a BPMN error, or a failure (retried).
        const report = handled.report;
        view = describeReport(report);
        if (report.kind === "bpmnError") await taskService.handleBpmnError(task, report.code, report.message);
        else if (report.kind === "failure") await fail(report);
        else {
          try {
            await taskService.complete(task, jsonVariables(report.output));
          } catch (err) {
            // The engine refused the completion (e.g. the model's next gateway fails on the result):
            // a failure, counted down to an incident, rather than a task re-run at every lock expiry.
            if (!isEngineAnswer(err)) throw err;
            const message = `the engine refused the completion: ${err instanceof Error ? err.message : String(err)}`;
            const refused = failureReport("COMPLETION_REFUSED", message, message, task.retries, defaultRetries);
            view = describeReport(refused);
            await fail(refused);
          }
        }
        reported = true;
      } catch (reportErr) {
        view = UNREPORTED;
        logger.error("could not report the task's outcome; its lock will expire and the engine will hand it out again", {
          engine: "camunda7",
          topic,
          taskId: task.id,
          error: reportErr instanceof Error ? reportErr.message : String(reportErr),
        });
      } finally {
        clearInterval(keepLocked);
        await handled?.settle(reported);
        inFlight--;
        metrics?.finished("camunda7", topic, view.kind, view.code, (performance.now() - started) / 1000);
        logger.info("task", { engine: "camunda7", topic, taskId: task.id, tenant, outcome: view.outcome, retries: task.retries ?? null, durationMs: Math.round(performance.now() - started) });
        settle();
      }
    });

  subscribe(options.topics?.apiRequest ?? "api-request", apiRequest);
  subscribe(options.topics?.calculateSeries ?? "calculate-series", calculateSeries);
  client.start();
  logger.info("camunda 7 worker started", { engine: "camunda7", workerId, baseUrl: options.baseUrl });

  return {
    engine: "camunda7",
    workerId,
    inHandId,
    async check() {
      const res = await fetch(`${options.baseUrl}/engine`, { signal: AbortSignal.timeout(2000) });
      if (!res.ok) throw new Error(`Camunda 7 answered ${res.status}`);
    },
    stop() {
      stopping = true;
      client.stop();
      return new Promise<void>((resolve) => {
        idle.push(resolve);
        settle();
      });
    },
  };
}

/**
 * The output variables, each a Json variable whatever its JSON value (an object, an array, a
 * number, text or null): the client would otherwise type a number as Integer or Double and text
 * as String. It passes text through as already serialised, so the value is serialised here.
 */
export function jsonVariables(output: Record<string, unknown>): Variables {
  const variables = new Variables();
  for (const [name, value] of Object.entries(output)) variables.setTyped(name, { type: "json", value: JSON.stringify(value ?? null), valueInfo: {} });
  return variables;
}

/** The engine answered (an HTTP error status), as opposed to not being reached at all. */
function isEngineAnswer(err: unknown): boolean {
  const response = (err as { response?: { statusCode?: unknown } } | null)?.response;
  return typeof response?.statusCode === "number";
}
