import { openEmbedded } from "./embedded.js";
import type { Database, DatabaseOptions } from "./options.js";
import { openPostgres } from "./postgres.js";
import { DEFAULT_DATABASE_TIMEOUTS } from "./timeouts.js";

export type { Database, DatabaseOptions, GraphSession } from "./options.js";
export { copyFromStdin } from "./copy.js";
export { GRAPH_SESSION_SETTINGS } from "./pools.js";
export { preparedName, rawPrepared, runPrepared } from "./prepared.js";
export { PREPARED_PER_CONNECTION } from "./statement-cache.js";
/** A connection string without its password (nor credential parameters), fit for a log line or a message. */
export { redactUrl } from "../secrets.js";

/**
 * Opens the database named by the options and brings its schema up to date: PostgreSQL when
 * `databaseUrl` is set (src/db/postgres.ts), else the embedded one (src/db/embedded.ts).
 */
export function openDatabase(options: DatabaseOptions): Promise<Database> {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...options.timeouts };
  if (options.databaseUrl !== undefined) return openPostgres(options.databaseUrl, options, timeouts);
  return openEmbedded(options, timeouts.probeMs);
}
