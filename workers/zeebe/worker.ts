import { Camunda8 } from "@camunda8/sdk";
import type { Logger } from "../../src/logger.js";
import type { TaskMetrics } from "../../src/metrics.js";
import type { Services } from "../../src/services.js";
import { retriesAfterFailure, retryTimeoutMs, taskOutcome } from "../../src/tasks/outcome.js";
import { apiRequest, calculateSeries, type OutputVariables, type TaskContext } from "../../src/tasks/tasks.js";
import type { RunningWorker } from "../camunda7/worker.js";

/** Settings of the Zeebe job workers. */
export interface ZeebeWorkerOptions {
  /** Gateway `host:port`. */
  address: string;
  /** TLS to the gateway; default plaintext. */
  tls?: boolean;
  /** OAuth client credentials (Camunda 8 SaaS or Identity); default none. */
  oauth?: { url: string; clientId: string; clientSecret: string; audience?: string };
  /** Job types; default `api-request` and `calculate-series`. */
  jobTypes?: { apiRequest?: string; calculateSeries?: string };
  /** Most jobs activated and run at once per job type. Default 10. */
  maxJobsToActivate?: number;
  /** How long an activated job is reserved for this worker. Default 30 s. */
  timeoutMs?: number;
  /** Retries assumed when a job carries none. Default 3. */
  defaultRetries?: number;
}

type Handler = (services: Services, variables: Record<string, unknown>, context: TaskContext) => Promise<OutputVariables>;

/** Zeebe's name for "no tenant" (multi-tenancy off). */
const DEFAULT_TENANT = "<default>";

/**
 * Job workers for the two job types through @camunda8/sdk: a job is completed with the output
 * variables, or ends in `job.error` with the §7 code (a 4xx problem: a BPMN error a boundary event
 * catches), or in `job.fail` with one retry fewer and a growing back-off.
 */
export function startZeebeWorker(services: Services, options: ZeebeWorkerOptions, logger: Logger, metrics?: TaskMetrics): RunningWorker {
  const c8 = new Camunda8({
    ZEEBE_GRPC_ADDRESS: `${options.tls === true ? "grpcs" : "grpc"}://${options.address}`,
    ...(options.oauth === undefined
      ? { CAMUNDA_AUTH_STRATEGY: "NONE" as const }
      : {
          CAMUNDA_AUTH_STRATEGY: "OAUTH" as const,
          CAMUNDA_OAUTH_URL: options.oauth.url,
          ZEEBE_CLIENT_ID: options.oauth.clientId,
          ZEEBE_CLIENT_SECRET: options.oauth.clientSecret,
          ...(options.oauth.audience !== undefined ? { ZEEBE_TOKEN_AUDIENCE: options.oauth.audience } : {}),
        }),
    ZEEBE_CLIENT_LOG_LEVEL: "NONE", CAMUNDA_LOG_LEVEL: "none",
  } as never);
  const zeebe = c8.getZeebeGrpcApiClient();
  const defaultRetries = options.defaultRetries ?? 3;

  const create = (taskType: string, handler: Handler) =>
    zeebe.createWorker({
      taskType,
      // The SDK's own log lines are not JSON lines of ours; the worker logs one line per task itself.
      loglevel: "NONE",
      maxJobsToActivate: options.maxJobsToActivate ?? 10,
      timeout: options.timeoutMs ?? 30_000,
      taskHandler: async (job) => {
        const started = performance.now();
        metrics?.fetched("zeebe", taskType);
        let kind: "completed" | "bpmnError" | "failure" = "completed";
        let code: string | undefined;
        const engineTenant = job.tenantId === DEFAULT_TENANT ? undefined : job.tenantId;
        const variables = job.variables as Record<string, unknown>;
        const tenant = (typeof variables.tenantId === "string" ? variables.tenantId : engineTenant) ?? null;
        let outcome = "completed";
        try {
          const output = await handler(services, variables, { tenant: engineTenant });
          return await job.complete(output as Parameters<typeof job.complete>[0]);
        } catch (err) {
          const result = taskOutcome(err);
          kind = result.kind;
          code = result.code;
          if (result.kind === "bpmnError") {
            outcome = `bpmnError ${result.code}`;
            return await job.error({ errorCode: result.code, errorMessage: result.message, variables: {} });
          }
          const retries = retriesAfterFailure(job.retries, defaultRetries);
          outcome = `failure ${result.code}`;
          return await job.fail({ errorMessage: result.message, retries, retryBackOff: retryTimeoutMs(retries, defaultRetries) });
        } finally {
          metrics?.finished("zeebe", taskType, kind, code, (performance.now() - started) / 1000);
          logger.info("task", { engine: "zeebe", topic: taskType, taskId: job.key, tenant, outcome, retries: job.retries, durationMs: Math.round(performance.now() - started) });
        }
      },
    });

  const workers = [create(options.jobTypes?.apiRequest ?? "api-request", apiRequest), create(options.jobTypes?.calculateSeries ?? "calculate-series", calculateSeries)];
  logger.info("zeebe worker started", { engine: "zeebe", address: options.address, tls: options.tls === true, oauth: options.oauth !== undefined });
  return {
    engine: "zeebe",
    workerId: "zeebe",
    async check() {
      await Promise.race([
        zeebe.topology(),
        new Promise((_, reject) => setTimeout(() => reject(new Error("the Zeebe gateway did not answer in 2 s")), 2000).unref()),
      ]);
    },
    async stop() {
      // close() stops activating jobs and waits for the jobs in hand.
      await Promise.all(workers.map((w) => w.close()));
      await zeebe.close();
    },
  };
}
