import { migrate } from "./migrate.js";
import type { DatabaseOptions } from "./options.js";
import { postgresPool } from "./pools.js";
import { READ_TIMEOUT_MARGIN_MS, type DatabaseTimeouts } from "./timeouts.js";
import { errorText, isPassingFault } from "../errors.js";
import { redactUrl } from "../secrets.js";

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/**
 * Brings the schema up to date on a connection of its own, without the statement time-out (a
 * migration may build an index on a large table, or wait for another process's migration).
 * While the database cannot be reached (refused, not answering, starting up), it tries again with
 * a doubling back-off (250 ms to 5 s) until DATABASE_STARTUP_TIMEOUT_MS has passed; then, or at
 * once for any other failure (a wrong password, a missing database), it fails with a message that
 * names the database and the last error.
 */
export async function migrateWhenReachable(url: string, options: DatabaseOptions, timeouts: DatabaseTimeouts): Promise<void> {
  const started = Date.now();
  const where = redactUrl(url);
  for (let attempt = 1, delay = 250; ; attempt++, delay = Math.min(delay * 2, 5000)) {
    const knex = postgresPool(url, { ...options, onWarning: undefined }, timeouts, { statementMs: 0, poolSize: 1, acquireMs: timeouts.connectMs + READ_TIMEOUT_MARGIN_MS });
    try {
      await migrate(knex);
      return;
    } catch (err) {
      if (!isPassingFault(err)) throw new Error(`the database ${where} failed at start: ${errorText(err)}`, { cause: err });
      const elapsed = Date.now() - started;
      if (elapsed + delay > timeouts.startupMs) {
        throw new Error(
          `the database ${where} could not be reached within ${timeouts.startupMs} ms (DATABASE_STARTUP_TIMEOUT_MS, ${attempt} attempts); last error: ${errorText(err)}`,
          { cause: err },
        );
      }
      options.onWarning?.(`the database ${where} cannot be reached (attempt ${attempt}): ${errorText(err)}; trying again in ${delay} ms`);
      await sleep(delay);
    } finally {
      await knex.destroy();
    }
  }
}
