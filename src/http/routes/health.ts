import { Type } from "typebox";
import { errorText, ProblemError } from "../../errors.js";
import type { App, ServerDeps } from "../types.js";

/**
 * Why the database check failed, in words that quote nothing of the database's own message (that
 * goes to the log with the request id).
 */
export function databaseFaultReason(err: unknown): string {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  const message = err instanceof Error ? err.message : "";
  if (code === "ETIMEDOUT" || code === "57014" || (err instanceof Error && err.name === "KnexTimeoutError")) return "it did not answer in time";
  if (code === "ECONNREFUSED") return "it refused the connection";
  if (code === "57P03") return "it is starting up or shutting down";
  if (["57P01", "57P02", "ECONNRESET", "EPIPE"].includes(code) || code.startsWith("08") || /Connection terminated|connection is closed|Client was closed/i.test(message)) {
    return "the connection to it was lost";
  }
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "its host name does not resolve";
  return "it answered with an error (the service log names it under this request's id)";
}

export function healthRoutes(app: App, { db, metrics, workers }: ServerDeps): void {
  app.get("/metrics", {
      schema: {
        operationId: "getMetrics",
        summary: "Prometheus metrics: tasks per topic and engine, REST requests, the process",
        tags: ["operations"],
        produces: ["text/plain"],
        response: { 200: { description: "Prometheus text exposition format", content: { "text/plain": { schema: Type.String() } } } },
      },
    }, async (_request, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );

  app.get(
    "/ready",
    {
      schema: {
        operationId: "getReadiness",
        summary: "Readiness: the database and each configured engine connection",
        tags: ["operations"],
        response: {
          200: Type.Object({
            status: Type.Literal("ready"),
            checks: Type.Record(Type.String(), Type.Object({ status: Type.Union([Type.Literal("up"), Type.Literal("down")]), error: Type.Optional(Type.String()) })),
          }),
        },
      },
    },
    async () => {
      const checks: Record<string, { status: "up" | "down"; error?: string }> = {};
      const errors: { path: string; message: string }[] = [];
      const probe = async (name: string, check: () => Promise<unknown>) => {
        try {
          await check();
          checks[name] = { status: "up" };
        } catch (err) {
          const message = name === "database" ? `the database does not answer: ${databaseFaultReason(err)}` : errorText(err);
          checks[name] = { status: "down", error: message };
          errors.push({ path: name, message });
        }
      };
      // db.ping answers within DATABASE_PROBE_TIMEOUT_MS whatever the database does.
      await Promise.all([probe("database", () => db.ping()), ...workers().map((w) => probe(w.engine, () => w.check()))]);
      if (errors.length > 0) {
        throw new ProblemError("UNAVAILABLE", `not ready: ${errors.map((e) => e.path).join(", ")} down`, { errors });
      }
      return { status: "ready" as const, checks };
    },
  );

  app.get(
    "/health",
    {
      schema: {
        operationId: "getHealth",
        summary: "Liveness and database check",
        tags: ["operations"],
        response: {
          200: Type.Object({
            status: Type.Literal("ok"),
            database: Type.Object({ kind: Type.String(), status: Type.Literal("ok") }),
          }),
        },
      },
    },
    async () => {
      // Within DATABASE_PROBE_TIMEOUT_MS (under a second) whatever the database does.
      try {
        await db.ping();
      } catch (err) {
        throw new ProblemError("UNAVAILABLE", `the database does not answer: ${databaseFaultReason(err)}`, { cause: err });
      }
      return { status: "ok" as const, database: { kind: db.kind, status: "ok" as const } };
    },
  );
}
