import type { Knex } from "knex";
import type { Backend, Walk, WalkLimits } from "./backend.js";
import { EmbeddedClient } from "./driver-patches.js";
import { embeddedBackend } from "./embedded.js";
import type { GraphSession } from "./options.js";
import { postgresBackend } from "./postgres.js";

export { WALK_BUDGET_EXCEEDED, WALK_TIMED_OUT, type Backend, type RowBatch, type Statement, type Walk, type WalkLimits } from "./backend.js";

/**
 * The backend `knex` (or a transaction of it) runs on. A knex on any PostgreSQL client (this
 * service's, or knex's own `pg`) is PostgreSQL; only the embedded database's client is not.
 */
export function storageOf(knex: Knex): Backend {
  return knex.client instanceof EmbeddedClient ? embeddedBackend : postgresBackend;
}

/** Runs a graph walk on the session's backend within its limits ({@link Backend.walk}). */
export function walkGraph<Row>(session: GraphSession, walk: Walk, limits: WalkLimits): Promise<Row[]> {
  return storageOf(session.knex).walk<Row>(session, walk, limits);
}
