import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./logger.js";
import { exitOnStartFailure, runService } from "./run.js";

/** Production entry point: the configuration comes from the environment, nothing is assumed. */
function main(): Promise<void> {
  try {
    const config = loadConfig();
    return runService(config, createLogger(config.logLevel));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

main().catch(exitOnStartFailure);
