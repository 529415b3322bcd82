import { ConfigError, configSecrets, loadConfig, type Config, type Role } from "./config.js";
import { createLogger, type Logger } from "./logger.js";
import { Redactor } from "./secrets.js";
import { createService, type Service } from "./service.js";
import { errorText } from "./errors.js";
import { processEnvironment } from "./config/environment.js";
import { startTracing, type Tracing } from "./observe/tracing.js";

/**
 * Starts the service and stops it cleanly on SIGTERM or SIGINT: no new work is taken, work in
 * flight finishes, the database closes, the process exits 0 (1 when the shutdown deadline passes).
 * Signals are handled from the first moment, so a stop during start-up still closes the database.
 */
export async function runService(config: Config, logger: Logger, afterStart?: (service: Service) => Promise<void>, tracing?: Tracing): Promise<void> {
  const state: { starting?: Promise<Service>; stopping: boolean } = { stopping: false };
  const stop = (signal: NodeJS.Signals) => {
    if (state.stopping) return;
    state.stopping = true;
    logger.info("shutting down: no new work is taken, work in flight is finished", { signal });
    const deadline = setTimeout(() => {
      logger.error("shutdown timed out; exiting with work still in flight", { timeoutMs: config.shutdownTimeoutMs });
      // The tasks still in hand did not end the process: their rows go (within 2 s), so the next
      // worker runs them instead of failing them as tasks that ended their worker.
      const released = (state.starting ?? Promise.reject(new Error("not started"))).then((service) => service.abandon());
      const bounded = new Promise((resolve) => setTimeout(resolve, 2000).unref());
      Promise.race([released, bounded])
        .catch((err: unknown) => logger.error("could not release the tasks in hand", { error: errorText(err) }))
        .finally(() => process.exit(1));
    }, config.shutdownTimeoutMs);
    deadline.unref();
    (state.starting ?? Promise.reject(new Error("not started")))
      .then((service) => service.close())
      // The spans of the last requests and tasks are exported before the process ends.
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.info("stopped", { signal });
          process.exit(0);
        },
        (err: unknown) => {
          logger.error("shutdown failed", { error: errorText(err) });
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);

  state.starting = createService(config, logger);
  const service = await state.starting;
  if (state.stopping) return;
  const address = await service.listen();
  logger.info("listening", { address, port: config.port });
  await afterStart?.(service);
}

/** The logger of a process run with `config`: its level, and every secret of the configuration redacted from every line. */
export function processLogger(config: Config): Logger {
  return createLogger(config.logLevel, undefined, configSecrets(config));
}

/**
 * Reports a start-up failure on stderr and exits: 2 for a configuration problem, 1 otherwise. The
 * text passes the redactor as a log line does (a message may quote a connection string).
 */
export function exitOnStartFailure(err: unknown, config?: Config): never {
  const redactor = new Redactor(config === undefined ? [] : configSecrets(config));
  if (err instanceof ConfigError) {
    process.stderr.write(`${redactor.redact(err.message)}\n`);
    process.exit(2);
  }
  process.stderr.write(`${redactor.redact(`failed to start: ${errorText(err)}`)}\n`);
  process.exit(1);
}

/**
 * An entry point: the configuration comes from the environment, nothing is assumed. A configuration
 * problem is printed and exits 2; any other start-up failure exits 1.
 */
export function runFromEnvironment(role: Role): void {
  let config: Config;
  try {
    config = loadConfig(undefined, role);
  } catch (err) {
    exitOnStartFailure(err);
  }
  const logger = processLogger(config);
  startTracing(processEnvironment())
    .then((tracing) => {
      if (tracing !== undefined) logger.info("tracing on: spans exported as the OTEL_* variables say");
      return runService(config, logger, undefined, tracing);
    })
    .catch((err: unknown) => exitOnStartFailure(err, config));
}
