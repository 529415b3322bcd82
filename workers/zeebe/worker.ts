import type { ServiceError } from "@grpc/grpc-js";
import type { ZeebeSettings } from "../../src/config.js";
import type { Services } from "../../src/services.js";
import { backPressureDelayMs, reconnectDelayMs } from "../../src/tasks/outcome.js";
import { parseRetryBackoff, RETRY_BACKOFF_HEADER } from "../../src/tasks/retry-backoff.js";
import { TaskRunner, type RunningWorker, type TaskHandler, type TaskReporter, type WorkerDeps } from "../../src/tasks/runner.js";
import { apiRequest, calculateSeries } from "../../src/tasks/tasks.js";
import { keepLocked } from "../../src/tasks/keep-locked.js";
import { WorkerState } from "../../src/tasks/worker-state.js";
import type { OutputVariables } from "../../src/tasks/tasks.js";
import { GatewayClient, GrpcStatus, type ReceivedJob, type ZeebeConnection } from "./gateway-client.js";
import { JobPoller } from "./poller.js";
import { JobStream, type JobVia } from "./stream.js";
import { errorText } from "../../src/errors.js";

export type { ZeebeConnection } from "./gateway-client.js";

/** Zeebe's name for "no tenant" (multi-tenancy off). */
const DEFAULT_TENANT = "<default>";

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
 * The worker's gRPC client of a gateway (gateway-client.ts): plaintext or TLS (`grpcs`, a private
 * CA, a client certificate), no authentication, OAuth client credentials, basic or a bearer token,
 * the credentials added by the SDK's providers from the SDK's own settings ({@link sdkConfiguration}).
 */
export function zeebeClient(options: ZeebeConnection): GatewayClient {
  return new GatewayClient(options, sdkConfiguration(options));
}

/**
 * The worker's jobs of the two job types, on its own gRPC client of the gateway; each job runs
 * through the task runner (src/tasks/runner.ts). What is Zeebe's alone lives here: the activation
 * (long polling, poller.ts, or job streaming, stream.ts), the job actions (complete, throw error,
 * fail with a back-off), back-pressure, and halting the activations while the gateway is lost,
 * probing it until it answers.
 */
export function startZeebeWorker(services: Services, settings: ZeebeSettings, deps: WorkerDeps): RunningWorker {
  const { logger } = deps;
  const zeebe = zeebeClient(settings);
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
  // Readiness and outage probes ask once and take no for an answer.
  const answers = () =>
    Promise.race([
      zeebe.topology(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("the Zeebe gateway did not answer in 2 s")), 2000).unref()),
    ]);
  // A job's report is asked again while the gateway is unreachable or pushes back, for its job timeout at most.
  const report = { retryForMs: settings.lockDurationMs };

  let pollers: JobPoller[] = [];
  let outage: Promise<void> | undefined;
  // Back-pressure: the refusals in a row (reset when a job is activated).
  let refusals = 0;

  /** Halts every poller (each one's open activation cancelled), runs `wait`, then starts them again unless the worker stops. */
  const haltWhile = (wait: () => Promise<void>) => {
    outage = (async () => {
      await Promise.all(pollers.map((p) => p.halt()));
      await wait();
      if (!state.stopping) for (const p of pollers) p.start();
    })().finally(() => (outage = undefined));
  };

  /**
   * Zeebe's back-pressure (`RESOURCE_EXHAUSTED`): the gateway answers but the broker takes no more
   * for now. Activations halt and start again after 0.5, 1, 2 … 10 s with jitter
   * ({@link backPressureDelayMs}), the pause growing with each refusal in a row until a job is
   * activated again.
   */
  const onBackPressure = () => {
    const pauseMs = backPressureDelayMs(refusals++);
    const fields = { engine: "zeebe", address: settings.address, refusals, pauseMs };
    if (refusals === 1) logger.warn("zeebe gateway back-pressure (RESOURCE_EXHAUSTED); asking for jobs again after a pause", fields);
    else logger.info("zeebe gateway back-pressure again; a longer pause", fields);
    haltWhile(() => state.pause(pauseMs));
  };

  /** A lost gateway: activations halt, the gateway is probed after 0.5, 1, 2 … 30 s, and they start again once it answers. One warning per outage, one line when it is back. */
  const onLost = (err: ServiceError) => {
    state.unreachable();
    logger.warn("zeebe gateway unreachable; retrying", { engine: "zeebe", address: settings.address, error: err.message });
    const since = Date.now();
    haltWhile(async () => {
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
      // The outage's first failure was the activation's, not a probe.
      logger.info("zeebe gateway reachable again", { engine: "zeebe", address: settings.address, outageMs: Date.now() - since, failedProbes: state.reachable() - 1 });
    });
  };

  /** A poller's activation failed: the poller has halted. The first failure of an episode decides; the others wait for its end. */
  const onActivationFailed = (err: ServiceError) => {
    if (state.stopping) return;
    if (outage !== undefined) {
      // Started again at the end of the episode under way (it halted the others).
      return;
    }
    if (err.code === GrpcStatus.RESOURCE_EXHAUSTED) onBackPressure();
    else onLost(err);
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
   * reported to the gateway (`reported` is called as the report is sent: the poller's slot is free,
   * the row is settled once the gateway has answered). Counted in hand
   * from the first line to the row settled: a stop waits for it.
   */
  const runJob = async (taskType: string, handler: TaskHandler, job: ReceivedJob, via?: JobVia, reported: () => void = () => {}) => {
    state.taskStarted();
    // The job timeout is extended while the job runs, as Camunda 7's lock is (Zeebe 8.5+); each
    // extension asked once (a failed one is tried again a third of a job timeout later).
    const timeout = keepLocked(() => zeebe.updateJobTimeout({ jobKey: job.key, timeout: settings.lockDurationMs }), settings.lockDurationMs, (err) =>
      logger.warn("job timeout extension failed", { engine: "zeebe", taskId: job.key, error: errorText(err) }),
    );
    /** The report on its way: the job's slot is free (its work is done; the gateway takes the report with the next activation). */
    const sent = <T>(report: Promise<T>): Promise<T> => {
      reported();
      return report;
    };
    try {
      const reporter: TaskReporter = {
        async complete(output: OutputVariables) {
          timeout.release();
          await sent(zeebe.completeJob({ jobKey: job.key, variables: output }, report));
        },
        async bpmnError(code, message) {
          timeout.release();
          await sent(zeebe.throwError({ jobKey: job.key, errorCode: code, errorMessage: message }, report));
        },
        async fail(failure) {
          timeout.release();
          await sent(zeebe.failJob({ jobKey: job.key, errorMessage: failure.message, retries: failure.retries, retryBackOff: backOffMs(job, failure.backOffMs) }, report));
        },
      };
      const tenant = job.tenantId === DEFAULT_TENANT ? undefined : job.tenantId;
      const { processInstanceKey, bpmnProcessId } = job;
      const task = { key: job.key, topic: taskType, retries: job.retries, variables: job.variables, tenant, processInstanceKey, bpmnProcessId };
      await runner.run({ ...task, ...(via !== undefined ? { via } : {}) }, handler, reporter);
    } finally {
      timeout.release();
      state.taskEnded();
    }
  };

  const polled = (taskType: string, handler: TaskHandler) =>
    new JobPoller({
      taskType,
      workerId,
      settings,
      client: zeebe,
      run: (job, reported) => runJob(taskType, handler, job, undefined, reported),
      // A job activated: the gateway takes activations again.
      activated: () => (refusals = 0),
      failed: onActivationFailed,
      unreadable: (message, err) => {
        const errorMessage = `the job's variables could not be parsed: ${errorText(err)}`;
        logger.warn("zeebe job whose variables could not be parsed; failed, one retry fewer", { engine: "zeebe", taskId: message.key, error: errorMessage });
        zeebe.failJob({ jobKey: message.key, errorMessage, retries: Math.max(0, message.retries - 1), retryBackOff: 0 }, report).catch((failed: unknown) =>
          logger.warn("could not fail the zeebe job; it is activated again after its job timeout", { engine: "zeebe", taskId: message.key, error: errorText(failed) }),
        );
      },
    });

  // ZEEBE_STREAM_JOBS: a job stream per job type, each with its own cap and reconnection (stream.ts).
  const streamed = (taskType: string, handler: TaskHandler) => {
    const stream = new JobStream({ taskType, workerId, settings, grpc: zeebe, client: zeebe, state, logger, answers, run: (job, via, reported) => runJob(taskType, handler, job, via, reported) });
    stream.start();
    return stream;
  };
  const streams = settings.streamJobs ? [streamed(settings.topics.apiRequest, apiRequest), streamed(settings.topics.calculateSeries, calculateSeries)] : [];
  if (!settings.streamJobs) {
    pollers = [polled(settings.topics.apiRequest, apiRequest), polled(settings.topics.calculateSeries, calculateSeries)];
    for (const p of pollers) p.start();
  }
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
      await outage;
      // No new activation: the open long polls are cancelled (a job the gateway has not yet sent
      // goes to another worker) and job streams too (a job pushed after is yielded back to the broker).
      await Promise.all([...pollers.map((p) => p.halt()), ...streams.map((stream) => stream.close())]);
      await idle;
      // A fallback poll under way as the stop began may have brought jobs since: they finish too.
      await state.stop();
      await zeebe.close();
    },
  };
}
