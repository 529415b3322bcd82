import { Client, Variables, type Task, type TaskService } from "camunda-external-task-client-js";
import type { Camunda7Settings } from "../../src/config.js";
import { reconnectDelayMs } from "../../src/tasks/outcome.js";
import { CompletionRefused, TaskRunner, type FailureReport, type RunningWorker, type TaskHandler, type TaskReporter, type WorkerDeps } from "../../src/tasks/runner.js";
import { apiRequest, calculateSeries } from "../../src/tasks/tasks.js";
import { keepLocked } from "../../src/tasks/keep-locked.js";
import { WorkerState } from "../../src/tasks/worker-state.js";
import type { Services } from "../../src/services.js";
import { engineAuthorization } from "./auth.js";
import { errorText } from "../../src/errors.js";

/**
 * Subscribes to the two topics and runs each task through the task runner (src/tasks/runner.ts).
 * What is Camunda 7's alone lives here: fetching with long polling and free slots only, a lock
 * kept while a task runs, the reports as REST calls, the back-off while the engine is unreachable.
 * If even a report fails, the lock simply expires and the engine hands the task out again.
 */
export function startCamunda7Worker(services: Services, settings: Camunda7Settings, deps: WorkerDeps): RunningWorker {
  const { logger } = deps;
  const runner = new TaskRunner({
    ...deps,
    engine: "camunda7",
    services,
    workerId: settings.workerId,
    defaultRetries: settings.defaultRetries,
    unreportedMessage: "could not report the task's outcome; its lock will expire and the engine will hand it out again",
  });
  const { workerId, inHandId } = runner;
  const { lockDurationMs, maxTasks } = settings;
  const authorization = engineAuthorization(settings.auth);
  const client = new Client({
    baseUrl: settings.url,
    // The client refuses an empty list.
    ...(authorization.interceptors.length > 0 ? { interceptors: authorization.interceptors } : {}),
    workerId,
    maxTasks,
    // maxTasks bounds the tasks in hand, not only one fetch: a fetch asks for the free slots only.
    maxParallelExecutions: maxTasks,
    lockDuration: lockDurationMs,
    asyncResponseTimeout: settings.asyncResponseTimeoutMs,
    // The next fetch follows the last at once: long polling keeps an idle worker from spinning,
    // and an unreachable engine is retried with the back-off below, not at this pace.
    interval: 20,
    autoPoll: false,
    use: () => {},
  });
  const state = new WorkerState();
  // The client announces a poll even when every slot is taken and it fetches nothing (and then
  // says nothing more): only a poll with a free slot is a fetch in progress.
  client.on("poll:start", () => {
    state.pollStarted(state.inFlight < maxTasks);
    if (state.polling) logger.debug("camunda 7 fetch", { engine: "camunda7", workerId });
  });
  client.on("poll:success", () => {
    state.pollEnded();
    const failedPolls = state.reachable();
    if (failedPolls > 0) logger.info("camunda 7 reachable again", { engine: "camunda7", workerId, failedPolls });
  });
  client.on("poll:error", (err: unknown) => {
    state.pollEnded();
    // A lost engine connection: said once per outage, retried with an exponential back-off (0.5 s … 30 s).
    const error = errorText(err);
    if (state.unreachable()) logger.warn("camunda 7 unreachable; retrying", { engine: "camunda7", workerId, error });
    else logger.debug("camunda 7 still unreachable", { engine: "camunda7", workerId, failedPolls: state.failedTries, error });
    if (state.stopping) return;
    client.stop();
    void state.pause(reconnectDelayMs(state.failedTries - 1)).then(() => {
      if (!state.stopping) client.start();
    });
  });

  const subscribe = (topic: string, handler: TaskHandler) =>
    client.subscribe(topic, { lockDuration: lockDurationMs }, async ({ task, taskService }: { task: Task; taskService: TaskService }) => {
      state.taskStarted();
      const lock = keepLocked(() => taskService.extendLock(task, lockDurationMs), lockDurationMs, (err) => logger.warn("lock extension failed", { engine: "camunda7", taskId: task.id, error: String(err) }));
      try {
        await runner.run(
          {
            key: task.id,
            topic,
            retries: task.retries,
            variables: task.variables.getAll() as Record<string, unknown>,
            tenant: task.tenantId,
            processInstanceKey: task.processInstanceId,
            bpmnProcessId: task.processDefinitionKey ?? undefined,
          },
          handler,
          reporter(task, taskService, lock.release),
        );
      } finally {
        lock.release();
        state.taskEnded();
      }
    });

  subscribe(settings.topics.apiRequest, apiRequest);
  subscribe(settings.topics.calculateSeries, calculateSeries);
  client.start();
  logger.info("camunda 7 worker started", { engine: "camunda7", workerId, baseUrl: settings.url, auth: settings.auth.kind });

  return {
    engine: "camunda7",
    workerId,
    inHandId,
    async check() {
      // One bound for the whole check, a token request included.
      const signal = AbortSignal.timeout(2000);
      const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("Camunda 7 (or its token endpoint) did not answer in 2 s")), { once: true }));
      aborted.catch(() => undefined);
      const header = await Promise.race([authorization.header(), aborted]);
      const res = await fetch(`${settings.url.replace(/\/$/, "")}/engine`, { headers: header === undefined ? {} : { authorization: header }, signal });
      if (!res.ok) throw new Error(`Camunda 7 answered ${res.status}`);
    },
    stop() {
      const idle = state.stop();
      client.stop();
      return idle;
    },
  };
}

/** The reports of one task as REST calls; each first ends the lock's extension. */
function reporter(task: Task, taskService: TaskService, releaseLock: () => void): TaskReporter {
  return {
    async complete(output) {
      releaseLock();
      try {
        await taskService.complete(task, jsonVariables(output));
      } catch (err) {
        if (isEngineAnswer(err)) throw new CompletionRefused(errorText(err));
        throw err;
      }
    },
    async bpmnError(code, message) {
      releaseLock();
      await taskService.handleBpmnError(task, code, message);
    },
    async fail(failure: FailureReport) {
      releaseLock();
      // The engine keeps at most 666 characters of the message (the details are unbounded).
      await taskService.handleFailure(task, { errorMessage: failure.message.slice(0, 600), errorDetails: failure.details, retries: failure.retries, retryTimeout: failure.backOffMs });
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
