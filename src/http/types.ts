import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Span } from "@opentelemetry/api";
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Correlation } from "../observe/correlation.js";
import type { Services } from "../services.js";
import type { RunningWorker } from "../tasks/runner.js";
import type { Authenticator, Principal } from "./auth.js";

/** The types the server and its route files share; they import them from here, not from each other. */

/**
 * Who may call a route: anyone, any holder of a valid token (and a tenant), or an admin. `stream`:
 * a WebSocket route that checks the token itself (an admin's), after the upgrade, so that a
 * refusal is a close code and a browser may send its token in a first message.
 */
export type Access = "public" | "user" | "admin" | "stream";

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | undefined;
    tenant: string | undefined;
    /** The request's id and trace id (observe.ts), set by the first onRequest hook. */
    correlation: Correlation | undefined;
    /** The request's server span (a no-op one when tracing is off). */
    span: Span | undefined;
  }
  interface FastifyContextConfig {
    access?: Access;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface ServerDeps {
  config: Config;
  db: Database;
  logger: Logger;
  authenticate: Authenticator;
  services: Services;
  metrics: Metrics;
  /** The process-engine workers running now (for the readiness check). */
  workers: () => RunningWorker[];
}
