import { ConfigError, loadConfig, type Config } from "./config.js";
import { createLogger } from "./logger.js";
import { createService, type Service } from "./service.js";

/** Entry point: read the configuration, start the service, stop it cleanly on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);

  // Signals are handled from the first moment, so a stop during start-up still closes the database.
  let starting: Promise<Service> | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down: no new work is taken, work in flight is finished", { signal });
    const deadline = setTimeout(() => {
      logger.error("shutdown timed out; exiting with work still in flight", { timeoutMs: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs);
    deadline.unref();
    (starting ?? Promise.reject(new Error("not started")))
      .then((service) => service.close())
      .then(
        () => {
          logger.info("stopped", { signal });
          process.exit(0);
        },
        (err: unknown) => {
          logger.error("shutdown failed", { error: err instanceof Error ? err.message : String(err) });
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);

  starting = createService(config, logger);
  const service = await starting;
  if (stopping) return;
  const address = await service.listen();
  logger.info("listening", { address, port: config.port });
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
