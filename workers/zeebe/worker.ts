import { Camunda8, Zeebe } from "@camunda8/sdk";
import type { Knex } from "knex";
import type { Logger } from "../../src/logger.js";
import type { TaskMetrics } from "../../src/metrics.js";
import type { Services } from "../../src/services.js";
import { defaultWorkerId, reconnectDelayMs } from "../../src/tasks/outcome.js";
import { describeReport, inHandWorkerId, takeTask, UNREPORTED, type Handled } from "../../src/tasks/take.js";
import { apiRequest, calculateSeries, type OutputVariables, type TaskContext } from "../../src/tasks/tasks.js";
import type { RunningWorker } from "../camunda7/worker.js";

/** Settings of the Zeebe job workers. */
export interface ZeebeWorkerOptions {
  /** Gateway `host:port`. */
  address: string;
  /** Where the jobs in hand are recorded (`tasks_in_hand`), so a job that ends the process is not run for ever. */
  database: Knex;
  /** TLS to the gateway; default plaintext. */
  tls?: boolean;
  /** PEM file of the CA that signed the gateway's certificate (a private CA); default the public CAs. */
  rootCertPath?: string;
  /** OAuth client credentials (Camunda 8 SaaS or Identity); default none. */
  oauth?: { url: string; clientId: string; clientSecret: string; audience?: string };
  /** Job types; default `api-request` and `calculate-series`. */
  jobTypes?: { apiRequest?: string; calculateSeries?: string };
  /** Most jobs activated and run at once per job type. Default 10. */
  maxJobsToActivate?: number;
  /** How long an activated job is reserved for this worker. Default 30 s. */
  timeoutMs?: number;
  /** The worker name the engine records for activated jobs; default `<host>-<pid>-<random>`. */
  workerId?: string;
  /** Pause between job activations (each a long poll). Default 20 ms. */
  pollIntervalMs?: number;
  /** Retries assumed when a job carries none. Default 3. */
  defaultRetries?: number;
}

type Handler = (services: Services, variables: Record<string, unknown>, context: TaskContext) => Promise<OutputVariables>;

const JOB_ACTION_ACKNOWLEDGEMENT = Zeebe.Types.JOB_ACTION_ACKNOWLEDGEMENT;

/** Zeebe's name for "no tenant" (multi-tenancy off). */
const DEFAULT_TENANT = "<default>";

export type ZeebeClient = ReturnType<Camunda8["getZeebeGrpcApiClient"]>;
/**
 * A gRPC client of @camunda8/sdk for a gateway: plaintext, TLS (`grpcs`) or OAuth client
 * credentials. The SDK's own console lines are off: the worker logs JSON lines of its own.
 */
export function zeebeClient(options: Pick<ZeebeWorkerOptions, "address" | "tls" | "oauth" | "rootCertPath">, retry = true): ZeebeClient {
  const c8 = new Camunda8({
    ZEEBE_GRPC_ADDRESS: `${options.tls === true ? "grpcs" : "grpc"}://${options.address}`,
    // The SDK also reads the environment, where ZEEBE_ADDRESS (ours) would make it warn that
    // ZEEBE_GRPC_ADDRESS wins; it does, so the legacy key is blanked.
    ZEEBE_ADDRESS: "",
    ...(options.rootCertPath !== undefined ? { CAMUNDA_CUSTOM_ROOT_CERT_PATH: options.rootCertPath } : {}),
    ...(options.oauth === undefined
      ? { CAMUNDA_AUTH_STRATEGY: "NONE" as const }
      : {
          CAMUNDA_AUTH_STRATEGY: "OAUTH" as const,
          CAMUNDA_OAUTH_URL: options.oauth.url,
          // Tokens are kept in memory, not written to the home directory.
          CAMUNDA_TOKEN_DISK_CACHE_DISABLE: true,
          ZEEBE_CLIENT_ID: options.oauth.clientId,
          ZEEBE_CLIENT_SECRET: options.oauth.clientSecret,
          ...(options.oauth.audience !== undefined ? { ZEEBE_TOKEN_AUDIENCE: options.oauth.audience } : {}),
        }),
    CAMUNDA_LOG_LEVEL: "none",
  } as never);
  // The log level is read from the nested settings only (a flat key is ignored: measured).
  // retry: the SDK repeats a command that meets an unavailable gateway (forever, by default).
  return c8.getZeebeGrpcApiClient({ zeebeGrpcSettings: { ZEEBE_CLIENT_LOG_LEVEL: "NONE", ZEEBE_GRPC_CLIENT_RETRY: retry } } as never);
}

/**
 * Job workers for the two job types through @camunda8/sdk: a job is completed with the output
 * variables, or ends in a BPMN error with the §7 code (a 4xx problem, which a boundary event
 * catches), or in `job.fail` with one retry fewer and a growing back-off. A job is recorded in
 * hand before it runs; one a process ended with is failed, not run (src/tasks/take.ts).
 */
export function startZeebeWorker(services: Services, options: ZeebeWorkerOptions, logger: Logger, metrics?: TaskMetrics): RunningWorker {
  const zeebe = zeebeClient(options);
  // Readiness and outage probes ask once and take no for an answer (no SDK retry loop left behind).
  const probe = zeebeClient(options, false);
  const defaultRetries = options.defaultRetries ?? 3;
  const workerId = options.workerId ?? defaultWorkerId();
  const inHandId = inHandWorkerId(workerId, options.workerId !== undefined);
  const take = { knex: options.database, engine: "zeebe" as const, workerId: inHandId, defaultRetries, logger };
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
  let stopping = false;
  // Ends the outage's wait between probes at once when the worker stops.
  let wake: (() => void) | undefined;
  const onConnectionError = () => {
    if (stopping || outage !== undefined) return;
    logger.warn("zeebe gateway unreachable; retrying", { engine: "zeebe", address: options.address });
    const lost = workers.splice(0);
    const since = Date.now();
    outage = (async () => {
      await Promise.all(lost.map((w) => w.close().catch(() => undefined)));
      let failedProbes = 0;
      while (!stopping) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, reconnectDelayMs(failedProbes));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        if (stopping) return;
        try {
          await answers();
          break;
        } catch {
          failedProbes++;
        }
      }
      if (stopping) return;
      logger.info("zeebe gateway reachable again", { engine: "zeebe", address: options.address, outageMs: Date.now() - since, failedProbes });
      startJobWorkers();
    })().finally(() => (outage = undefined));
  };

  const create = (taskType: string, handler: Handler) =>
    zeebe.createWorker({
      taskType,
      id: workerId,
      // The SDK's own log lines are not JSON lines of ours; the worker logs one line per task itself.
      loglevel: "NONE",
      maxJobsToActivate: options.maxJobsToActivate ?? 10,
      timeout: options.timeoutMs ?? 30_000,
      // An activation is a long poll (held by the gateway until jobs arrive); the interval is only
      // the pause before the next one, so a short one keeps a busy worker busy without spinning.
      pollInterval: options.pollIntervalMs ?? 20,
      onConnectionError,
      taskHandler: async (job) => {
        const started = performance.now();
        metrics?.fetched("zeebe", taskType);
        const engineTenant = job.tenantId === DEFAULT_TENANT ? undefined : job.tenantId;
        const variables = job.variables as Record<string, unknown>;
        const tenant = (typeof variables.tenantId === "string" ? variables.tenantId : engineTenant) ?? null;
        let handled: Handled | undefined;
        let view = UNREPORTED;
        let reported = false;
        try {
          handled = await takeTask(take, { key: job.key, topic: taskType, retries: job.retries }, () => handler(services, variables, { tenant: engineTenant }));
          // Exactly one job action per job: complete, error (a BPMN error) or fail (retried).
          const report = handled.report;
          view = describeReport(report);
          let acknowledged: typeof JOB_ACTION_ACKNOWLEDGEMENT;
          if (report.kind === "completed") acknowledged = await job.complete(report.output as Parameters<typeof job.complete>[0]);
          else if (report.kind === "failure") acknowledged = await job.fail({ errorMessage: report.message, retries: report.retries, retryBackOff: report.backOffMs });
          else {
            // The SDK's job.error swallows a refused command; the client's throwError does not.
            try {
              await zeebe.throwError({ jobKey: job.key, errorCode: report.code, errorMessage: report.message });
            } finally {
              job.forward();
            }
            acknowledged = JOB_ACTION_ACKNOWLEDGEMENT;
          }
          reported = true;
          return acknowledged;
        } catch (reportErr) {
          view = UNREPORTED;
          logger.error("could not report the job's outcome; it times out and the engine activates it again", {
            engine: "zeebe",
            topic: taskType,
            taskId: job.key,
            error: reportErr instanceof Error ? reportErr.message : String(reportErr),
          });
          return JOB_ACTION_ACKNOWLEDGEMENT;
        } finally {
          await handled?.settle(reported);
          metrics?.finished("zeebe", taskType, view.kind, view.code, (performance.now() - started) / 1000);
          logger.info("task", { engine: "zeebe", topic: taskType, taskId: job.key, tenant, outcome: view.outcome, retries: job.retries, durationMs: Math.round(performance.now() - started) });
        }
      },
    });

  const startJobWorkers = () => {
    workers = [create(options.jobTypes?.apiRequest ?? "api-request", apiRequest), create(options.jobTypes?.calculateSeries ?? "calculate-series", calculateSeries)];
  };
  startJobWorkers();
  logger.info("zeebe worker started", { engine: "zeebe", workerId, address: options.address, tls: options.tls === true, oauth: options.oauth !== undefined });
  return {
    engine: "zeebe",
    workerId,
    inHandId,
    async check() {
      await answers();
    },
    async stop() {
      stopping = true;
      wake?.();
      // Jobs in hand (also those of job workers closed by an outage) report through the client:
      // it closes last. close() stops activating jobs and waits for the jobs in hand.
      await outage;
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all([zeebe.close(), probe.close()]);
    },
  };
}
