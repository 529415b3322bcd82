import { EventEmitter } from "node:events";
import { Camunda8, Zeebe } from "@camunda8/sdk";
import type { ZeebeSettings } from "../../src/config.js";
import type { Services } from "../../src/services.js";
import { backPressureDelayMs, reconnectDelayMs } from "../../src/tasks/outcome.js";
import { parseRetryBackoff, RETRY_BACKOFF_HEADER } from "../../src/tasks/retry-backoff.js";
import { TaskRunner, type RunningWorker, type TaskHandler, type TaskReporter, type WorkerDeps } from "../../src/tasks/runner.js";
import { apiRequest, calculateSeries } from "../../src/tasks/tasks.js";
import { keepLocked } from "../../src/tasks/keep-locked.js";
import { WorkerState } from "../../src/tasks/worker-state.js";
import type { OutputVariables } from "../../src/tasks/tasks.js";
import { jobGrpcClient, JobStream, type JobVia, type ReceivedJob } from "./stream.js";
import { errorText } from "../../src/errors.js";

const JOB_ACTION_ACKNOWLEDGEMENT = Zeebe.Types.JOB_ACTION_ACKNOWLEDGEMENT;

/** Pause between job activations (each a long poll held by the gateway until jobs arrive). */
const POLL_INTERVAL_MS = 20;

/** The gRPC status of Zeebe's back-pressure answer (`RESOURCE_EXHAUSTED`). */
const RESOURCE_EXHAUSTED = 8;

/** Zeebe's name for "no tenant" (multi-tenancy off). */
const DEFAULT_TENANT = "<default>";

export type ZeebeClient = ReturnType<Camunda8["getZeebeGrpcApiClient"]>;
type JobWorker = ReturnType<ZeebeClient["createWorker"]>;

/** How a job's one outcome reaches the engine: the SDK job's own actions (polled) or the client's (streamed). */
interface JobActions {
  complete(output: OutputVariables): Promise<unknown>;
  bpmnError(request: { jobKey: string; errorCode: string; errorMessage: string }): Promise<unknown>;
  fail(request: { errorMessage: string; retries: number; retryBackOff: number }): Promise<unknown>;
}

/**
 * Closes a job worker: no new activation, the jobs in hand finish. The SDK's close() leaves the
 * long poll under way open while jobs are in hand; a job the gateway activates into it is then
 * dropped unrun and waits for its job timeout. Cancelled here, the poll takes no job: the gateway
 * gives new jobs to the workers still polling.
 */
function closeJobWorker(worker: JobWorker): Promise<unknown> {
  // The open activation is the SDK's private field (it cancels it itself only when no job is in hand).
  const cancel = () => (worker as unknown as { jobStream?: { cancel?: () => void } }).jobStream?.cancel?.();
  const closed = worker.close();
  cancel();
  // An activation being opened as close() is called is set after it: cancelled as soon as it is.
  const again = setInterval(cancel, POLL_INTERVAL_MS);
  return closed.finally(() => clearInterval(again));
}
/**
 * Keeps a job worker's slots filled. The SDK's job worker asks for jobs only once 70 % of its slots
 * are free, and then at its next poll tick: with a backlog, its jobs in hand swing between 10 and
 * 3 and it waits up to a poll interval between batches (measured: 0.23x the throughput of the same
 * requests over REST at the same concurrency). Here it asks as soon as a slot frees: the slots freed
 * in one turn of the event loop (jobs ending together) are asked for by one activation. The
 * fields are the SDK's private ones; where they are missing (another SDK version) its own pace
 * stays.
 */
function refillOnFreeSlot(worker: JobWorker, maxTasks: number): void {
  const internals = worker as unknown as { activeJobsThresholdForReactivation?: number; capacityEmitter?: EventEmitter; poll?: () => Promise<void> };
  if (typeof internals.poll !== "function" || typeof internals.activeJobsThresholdForReactivation !== "number" || !(internals.capacityEmitter instanceof EventEmitter)) return;
  const poll = internals.poll.bind(worker);
  internals.activeJobsThresholdForReactivation = maxTasks - 1;
  let due = false;
  internals.capacityEmitter.on("AVAILABLE", () => {
    if (due) return;
    due = true;
    setImmediate(() => {
      due = false;
      void poll();
    });
  });
}

/** What a gRPC client of the gateway is made from: the address, TLS, the CA and client certificate, the authentication. */
export type ZeebeConnection = Pick<ZeebeSettings, "address"> & Partial<Pick<ZeebeSettings, "tls" | "auth" | "rootCertPath" | "mtls">>;

/**
 * The connection as the SDK's own settings (its names: ZEEBE_GRPC_ADDRESS, CAMUNDA_AUTH_STRATEGY
 * …), every one given explicitly, so the SDK's reading of the environment never picks another.
 * This is where a {@link Secret} is revealed: to the SDK, which sends it to the gateway or the
 * token endpoint.
 */
export function sdkConfiguration(options: ZeebeConnection): Record<string, string | boolean> {
  const auth = options.auth ?? { strategy: "NONE" };
  const credentials: Record<string, string | boolean> =
    auth.strategy === "OAUTH"
      ? {
          CAMUNDA_OAUTH_URL: auth.url,
          // Tokens are kept in memory, not written to the home directory.
          CAMUNDA_TOKEN_DISK_CACHE_DISABLE: true,
          ZEEBE_CLIENT_ID: auth.clientId,
          ZEEBE_CLIENT_SECRET: auth.clientSecret.reveal(),
          ...(auth.audience !== undefined ? { ZEEBE_TOKEN_AUDIENCE: auth.audience, CAMUNDA_ZEEBE_OAUTH_AUDIENCE: auth.audience } : {}),
          ...(auth.scope !== undefined ? { CAMUNDA_TOKEN_SCOPE: auth.scope } : {}),
        }
      : auth.strategy === "BASIC"
        ? { CAMUNDA_BASIC_AUTH_USERNAME: auth.username, CAMUNDA_BASIC_AUTH_PASSWORD: auth.password.reveal() }
        : auth.strategy === "BEARER"
          ? { CAMUNDA_OAUTH_TOKEN: auth.token.reveal() }
          : {};
  return {
    ZEEBE_GRPC_ADDRESS: `${options.tls === true ? "grpcs" : "grpc"}://${options.address}`,
    // The SDK also reads the environment, where ZEEBE_ADDRESS (ours) would make it warn that
    // ZEEBE_GRPC_ADDRESS wins; it does, so the legacy key is blanked.
    ZEEBE_ADDRESS: "",
    ...(options.rootCertPath !== undefined ? { CAMUNDA_CUSTOM_ROOT_CERT_PATH: options.rootCertPath } : {}),
    ...(options.mtls !== undefined ? { CAMUNDA_CUSTOM_CERT_CHAIN_PATH: options.mtls.certChainPath, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: options.mtls.privateKeyPath } : {}),
    CAMUNDA_AUTH_STRATEGY: auth.strategy,
    // Read from the environment, it would turn any strategy into NONE.
    CAMUNDA_OAUTH_DISABLED: false,
    ...credentials,
    CAMUNDA_LOG_LEVEL: "none",
  };
}

/**
 * A gRPC client of @camunda8/sdk for a gateway: plaintext or TLS (`grpcs`, a private CA, a client
 * certificate), no authentication, OAuth client credentials, basic or a bearer token. The SDK's
 * own console lines are off: the worker logs JSON lines of its own.
 */
export function zeebeClient(options: ZeebeConnection, retry = true): ZeebeClient {
  const c8 = new Camunda8(sdkConfiguration(options) as never);
  // The log level is read from the nested settings only (a flat key is ignored: measured).
  // retry: the SDK repeats a command that meets an unavailable gateway (forever, by default).
  return c8.getZeebeGrpcApiClient({ zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: "NONE", ZEEBE_GRPC_CLIENT_RETRY: retry } } as never);
}

/**
 * Job workers for the two job types through @camunda8/sdk; each job runs through the task runner
 * (src/tasks/runner.ts). What is Zeebe's alone lives here: the job workers, the job actions
 * (complete, throw error, fail with a back-off), and closing the job workers while the gateway is
 * lost, probing it until it answers.
 */
export function startZeebeWorker(services: Services, settings: ZeebeSettings, deps: WorkerDeps): RunningWorker {
  const { logger } = deps;
  const zeebe = zeebeClient(settings);
  // Readiness and outage probes and job timeout extensions ask once and take no for an answer (no
  // SDK retry loop left behind; a failed extension is tried again a third of a job timeout later).
  const probe = zeebeClient(settings, false);
  const runner = new TaskRunner({
    ...deps,
    engine: "zeebe",
    services,
    workerId: undefined,
    defaultRetries: settings.defaultRetries,
    unreportedMessage: "could not report the job's outcome; it times out and the engine activates it again",
  });
  const { workerId, inHandId } = runner;
  const state = new WorkerState();
  const answers = () =>
    Promise.race([
      probe.topology(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("the Zeebe gateway did not answer in 2 s")), 2000).unref()),
    ]);

  // A lost gateway: the job workers are closed (the SDK would otherwise retry an activation every
  // poll interval), the gateway is probed after 0.5, 1, 2 … 30 s, and fresh job workers start once
  // it answers. One warning per outage, one line when it is back.
  let workers: ReturnType<typeof create>[] = [];
  let outage: Promise<void> | undefined;
  // Back-pressure: the refusals in a row (reset when a job is activated) and whether the error the
  // SDK reports as a connection error was one (its job worker's `streamError` says so just after).
  let refusals = 0;
  let backPressured = false;
  const onConnectionError = () => {
    // The SDK calls this before its job worker emits the stream's error: decided once that has been seen.
    setImmediate(() => {
      const refused = backPressured;
      backPressured = false;
      if (refused) onBackPressure();
      else onLost();
    });
  };

  /**
   * Zeebe's back-pressure (`RESOURCE_EXHAUSTED`): the gateway answers but the broker takes no more
   * for now. The job workers are closed (the SDK would ask again at its own pace) and fresh ones
   * start after 0.5, 1, 2 … 10 s with jitter ({@link backPressureDelayMs}), the pause growing with each
   * refusal in a row until a job is activated again.
   */
  const onBackPressure = () => {
    if (state.stopping || outage !== undefined) return;
    const pauseMs = backPressureDelayMs(refusals++);
    const fields = { engine: "zeebe", address: settings.address, refusals, pauseMs };
    if (refusals === 1) logger.warn("zeebe gateway back-pressure (RESOURCE_EXHAUSTED); asking for jobs again after a pause", fields);
    else logger.info("zeebe gateway back-pressure again; a longer pause", fields);
    const refusedWorkers = workers.splice(0);
    outage = (async () => {
      await Promise.all(refusedWorkers.map((w) => closeJobWorker(w).catch(() => undefined)));
      await state.pause(pauseMs);
      if (!state.stopping) startJobWorkers();
    })().finally(() => (outage = undefined));
  };

  const onLost = () => {
    if (state.stopping || outage !== undefined) return;
    state.unreachable();
    logger.warn("zeebe gateway unreachable; retrying", { engine: "zeebe", address: settings.address });
    const lost = workers.splice(0);
    const since = Date.now();
    outage = (async () => {
      await Promise.all(lost.map((w) => closeJobWorker(w).catch(() => undefined)));
      for (;;) {
        await state.pause(reconnectDelayMs(state.failedTries - 1));
        if (state.stopping) return;
        try {
          await answers();
          break;
        } catch {
          state.unreachable();
          logger.debug("zeebe gateway still unreachable", { engine: "zeebe", address: settings.address, failedProbes: state.failedTries - 1 });
        }
      }
      // The outage's first failure was the connection error, not a probe.
      logger.info("zeebe gateway reachable again", { engine: "zeebe", address: settings.address, outageMs: Date.now() - since, failedProbes: state.reachable() - 1 });
      startJobWorkers();
    })().finally(() => (outage = undefined));
  };

  /**
   * The back-off of a job's failure: its task's `retryBackoff` header (an ISO-8601 duration, as
   * connectors read it) when it has one, else the runner's growing back-off. A header that is not a
   * duration keeps the runner's back-off, with a warning naming the header and the task.
   */
  const backOffMs = (job: ReceivedJob, byRunner: number): number => {
    const header = parseRetryBackoff(job.customHeaders[RETRY_BACKOFF_HEADER]);
    if (header.kind === "fixed") return header.ms;
    if (header.kind === "invalid") {
      logger.warn(`the task's ${RETRY_BACKOFF_HEADER} header ${header.reason}; the default back-off applies`, {
        engine: "zeebe",
        taskId: job.key,
        header: RETRY_BACKOFF_HEADER,
        value: header.value,
        backOffMs: byRunner,
      });
    }
    return byRunner;
  };

  /**
   * Runs a job through the task runner, its job timeout extended meanwhile, its one outcome
   * reported through `actions` (the SDK job's own when polled, the client's when streamed).
   * Counted in hand from the first line: a stop waits for it.
   */
  const runJob = async (taskType: string, handler: TaskHandler, job: ReceivedJob, actions: JobActions, via?: JobVia) => {
    state.taskStarted();
    // The job timeout is extended while the job runs, as Camunda 7's lock is (Zeebe 8.5+).
    const timeout = keepLocked(() => probe.updateJobTimeout({ jobKey: job.key, timeout: settings.lockDurationMs }), settings.lockDurationMs, (err) =>
      logger.warn("job timeout extension failed", { engine: "zeebe", taskId: job.key, error: errorText(err) }),
    );
    try {
      const reporter: TaskReporter = {
        async complete(output) {
          timeout.release();
          await actions.complete(output);
        },
        async bpmnError(code, message) {
          timeout.release();
          // The SDK's job.error swallows a refused command; the client's throwError does not.
          await actions.bpmnError({ jobKey: job.key, errorCode: code, errorMessage: message });
        },
        async fail(failure) {
          timeout.release();
          await actions.fail({ errorMessage: failure.message, retries: failure.retries, retryBackOff: backOffMs(job, failure.backOffMs) });
        },
      };
      const tenant = job.tenantId === DEFAULT_TENANT ? undefined : job.tenantId;
      await runner.run({ key: job.key, topic: taskType, retries: job.retries, variables: job.variables, tenant, ...(via !== undefined ? { via } : {}) }, handler, reporter);
    } finally {
      timeout.release();
      state.taskEnded();
    }
  };

  const create = (taskType: string, handler: TaskHandler) => {
    const worker = zeebe.createWorker({
      taskType,
      id: workerId,
      // The SDK's own log lines are not JSON lines of ours; the runner logs one line per task.
      loglevel: "NONE",
      maxJobsToActivate: settings.maxTasks,
      ...(settings.tenantIds !== undefined ? { tenantIds: settings.tenantIds } : {}),
      timeout: settings.lockDurationMs,
      // An activation is a long poll (held by the gateway until jobs arrive); the interval is only
      // the pause before the next one, so a short one keeps a busy worker busy without spinning.
      pollInterval: POLL_INTERVAL_MS,
      onConnectionError,
      taskHandler: async (job) => {
        // A job activated: the gateway takes activations again.
        refusals = 0;
        await runJob(taskType, handler, job, {
          complete: (output) => job.complete(output as Parameters<typeof job.complete>[0]),
          // job.forward() tells the SDK's job worker the job is done with (it counts its jobs in hand).
          bpmnError: (request) => zeebe.throwError(request).finally(() => job.forward()),
          fail: (request) => job.fail(request),
        });
        // Exactly one job action per job, made by the reporter (or none reached the engine: the job times out).
        return JOB_ACTION_ACKNOWLEDGEMENT;
      },
    });
    worker.on("streamError", (err: unknown) => {
      if ((err as { code?: unknown } | null)?.code !== RESOURCE_EXHAUSTED) return;
      backPressured = true;
      // Read by the connection error's handler, due first; not left over for a later error.
      setImmediate(() => (backPressured = false));
    });
    refillOnFreeSlot(worker, settings.maxTasks);
    return worker;
  };

  const startJobWorkers = () => {
    workers = [create(settings.topics.apiRequest, apiRequest), create(settings.topics.calculateSeries, calculateSeries)];
  };

  // ZEEBE_STREAM_JOBS: a job stream per job type, each with its own connection, cap and reconnection (stream.ts).
  const streamed = (taskType: string, handler: TaskHandler) => {
    const grpc = jobGrpcClient(zeebe, taskType);
    const stream = new JobStream({
      taskType,
      workerId,
      settings,
      grpc,
      client: zeebe,
      state,
      logger,
      answers,
      run: (job, via) =>
        runJob(
          taskType,
          handler,
          job,
          {
            complete: (output) => zeebe.completeJob({ jobKey: job.key, variables: output as never }),
            bpmnError: (request) => zeebe.throwError(request),
            fail: (request) => zeebe.failJob({ jobKey: job.key, ...request }),
          },
          via,
        ),
    });
    stream.start();
    return { stream, grpc };
  };
  const streams = settings.streamJobs ? [streamed(settings.topics.apiRequest, apiRequest), streamed(settings.topics.calculateSeries, calculateSeries)] : [];
  if (!settings.streamJobs) startJobWorkers();
  logger.info("zeebe worker started", {
    engine: "zeebe",
    workerId,
    address: settings.address,
    tls: settings.tls,
    mtls: settings.mtls !== undefined,
    auth: settings.auth.strategy,
    streamJobs: settings.streamJobs,
  });
  return {
    engine: "zeebe",
    workerId,
    inHandId,
    async check() {
      await answers();
    },
    async stop() {
      // Ends the outage's wait between probes at once.
      const idle = state.stop();
      // Jobs in hand (also those of job workers closed by an outage) report through the client:
      // it closes last. Closing stops activating jobs (the open poll cancelled) and waits for the jobs in hand.
      await outage;
      // Job streams are cancelled first (a job pushed after is yielded back to the broker, not activated).
      await Promise.all([...workers.map(closeJobWorker), ...streams.map(({ stream }) => stream.close())]);
      await idle;
      // A fallback poll under way as the stop began may have brought jobs since: they finish too.
      await state.stop();
      await Promise.all([zeebe.close(), probe.close(), ...streams.map(({ grpc }) => grpc.close())]);
    },
  };
}
