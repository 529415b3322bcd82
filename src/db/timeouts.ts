import { databaseTimeoutSettings, READ_TIMEOUT_MARGIN_MS, type DatabaseTimeouts } from "../config/database.js";
import { graphQuerySettings } from "../config/limits.js";
import { defaultsOf } from "../config/setting.js";

/** The bounds put on every PostgreSQL connection: declared, with their defaults, in src/config/database.ts. */
export { READ_TIMEOUT_MARGIN_MS, type DatabaseTimeouts };

/** QUERY_TIMEOUT_MS: the statement time-out of graph queries, unless configured. */
export const DEFAULT_QUERY_TIMEOUT_MS = graphQuerySettings.queryTimeoutMs.default;

export const DEFAULT_DATABASE_TIMEOUTS: Readonly<DatabaseTimeouts> = defaultsOf(databaseTimeoutSettings);


/** Thrown when the database sent no answer in time: the connection it was on is dropped. */
export class DatabaseTimeoutError extends Error {
  readonly code = "ETIMEDOUT";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DatabaseTimeoutError";
  }
}
