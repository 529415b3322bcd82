import type { Knex } from "knex";
import type { NotificationSource } from "./notifications.js";
import type { DatabaseTimeouts } from "./timeouts.js";

export interface DatabaseOptions {
  /** PostgreSQL connection string; absent means the embedded PostgreSQL. */
  databaseUrl: string | undefined;
  /** Directory of the embedded database, or `memory://` for one that lives in memory. */
  dataDir: string;
  poolSize: number;
  /** Schema to work in (PostgreSQL only); default `public`. */
  schema?: string;
  /** Where knex's own warnings go (a failed connection attempt, say); default: nowhere. */
  onWarning?: (message: string) => void;
  /** statement_timeout of graph queries (QUERY_TIMEOUT_MS); default 5000 ms. */
  queryTimeoutMs?: number;
  /** Connection, statement, idle and start-up bounds (PostgreSQL); default {@link DEFAULT_DATABASE_TIMEOUTS}. */
  timeouts?: Partial<DatabaseTimeouts>;
}

/**
 * Where graph queries run. On PostgreSQL, a pool of its own whose connections are opened with the
 * graph query time-out as `statement_timeout` and the planner settings of GRAPH_SESSION_SETTINGS
 * (src/db/pools.ts): a walk is one round trip, of a statement prepared, and planned once, per
 * connection (`plan_cache_mode = force_generic_plan`; the compiler writes walks whose generic plan
 * holds for every tenant, which test/db/plan-safety.test.ts checks). On the embedded database, the
 * one connection, with the settings made per query in a transaction. Walks run through
 * {@link walkGraph} (src/db/storage.ts), which knows which.
 */
export interface GraphSession {
  knex: Knex;
  /** The statement_timeout the connections already carry (with the graph settings); undefined when none. */
  presetTimeoutMs: number | undefined;
}

export interface Database {
  knex: Knex;
  graph: GraphSession;
  kind: "postgres" | "embedded";
  /** `LISTEN` on a connection of its own (live streams): shared by every process on one PostgreSQL. */
  notifications: NotificationSource;
  /**
   * Resolves when the database answers a trivial query within the probe time-out; rejects with the
   * reason otherwise. Probes in flight at once share one query, on a connection of their own (PostgreSQL).
   */
  ping(): Promise<void>;
  /** Closes every connection (and releases the embedded database's lock). Safe to call twice. */
  close(): Promise<void>;
}
