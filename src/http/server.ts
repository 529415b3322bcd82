import swagger from "@fastify/swagger";
import websocket from "@fastify/websocket";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest } from "fastify";
import { callerProblem, databaseCause, ProblemError, toProblemError, type ProblemDetail } from "../errors.js";
import type { Logger } from "../logger.js";
import { requestIdFrom } from "../observe/correlation.js";
import { endRequestSpan, startRequest } from "./observe.js";
import { mayActIn } from "./auth.js";
import { readTenant } from "./request.js";
import { apiDefinitionRoutes } from "./routes/api-definitions.js";
import { calculationRoutes } from "./routes/calculations.js";
import { consoleRoutes } from "./routes/console.js";
import { eventRoutes } from "./routes/events.js";
import { graphRoutes } from "./routes/graph.js";
import { healthRoutes } from "./routes/health.js";
import { streamRoutes } from "./routes/streams.js";
import { parseJsonBody } from "./json-body.js";
import { clientErrorHandler, decodeContentEncoding, frameworkProblem, MAX_PARAM_LENGTH, refuseFaultyText, refuseForeignCharset } from "./input.js";
import { Problem } from "./schemas.js";
import type { Access, App, ServerDeps } from "./types.js";
import { schemaCompiler } from "./validation.js";

/** Builds the REST server on an open database; the caller listens and closes. */
export async function buildServer(deps: ServerDeps): Promise<App> {
  const { config, logger, authenticate } = deps;
  const app = Fastify({
    logger: false,
    bodyLimit: config.bodyLimitBytes,
    // The caller's X-Request-Id when valid (1–128 of [A-Za-z0-9._:-]), else a new uuid.
    genReqId: (raw) => requestIdFrom(raw.headers["x-request-id"]),
    // While closing, keep-alive requests are answered by our own hook with a problem body.
    return503OnClosing: false,
    // Input limits (docs/reference/input-limits.md): path parameters are bounded by the routes' schemas, which name them.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Prototype keys are refused by refuseFaultyText, naming the key, not by the parser as "not JSON".
    onProtoPoisoning: "ignore",
    onConstructorPoisoning: "ignore",
    clientErrorHandler,
    frameworkErrors: (err, request, reply) => {
      void sendProblem(frameworkProblem(err), request, reply, logger);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(schemaCompiler());
  // Only JSON bodies are accepted unless a route adds its own parser (NDJSON, CSV): text is a 415.
  app.removeContentTypeParser("text/plain");
  // JSON bodies are read by parseJson, not JSON.parse (docs/decisions/2026-11-23-json-parser-for-escaped-keys.md).
  app.addContentTypeParser("application/json", { parseAs: "string" }, parseJsonBody);

  app.decorateRequest("principal", undefined);
  app.decorateRequest("tenant", undefined);
  app.decorateRequest("correlation", undefined);
  app.decorateRequest("span", undefined);
  // First of all: the request's id in its answer, its span, and its fields on every log line of its course.
  app.addHook("onRequest", startRequest);

  let closing = false;
  app.addHook("onClose", async () => {
    closing = true;
  });
  app.addHook("preClose", async () => {
    closing = true;
  });

  app.addHook("onRequest", async (request) => {
    if (closing) throw new ProblemError("UNAVAILABLE", "the service is shutting down; retry on another instance");
    const access = request.routeOptions.config?.access ?? "public";
    if (access === "public" || access === "stream") return;
    request.principal = await authenticate(request.headers.authorization);
    request.tenant = readTenant(request.headers["x-tenant-id"]);
    // Decided before any handler reads; the answer is the same whether the tenant exists or not.
    if (!mayActIn(request.principal, request.tenant)) {
      throw new ProblemError("FORBIDDEN", "this token does not name the tenant in X-TENANT-ID");
    }
    if (access === "admin" && !request.principal.roles.includes("admin")) {
      throw new ProblemError("FORBIDDEN", "this endpoint needs a token whose roles claim contains admin");
    }
  });

  // After the access checks, before anything reads the body as text or data (docs/reference/input-limits.md).
  app.addHook("preParsing", refuseForeignCharset);
  app.addHook("preParsing", decodeContentEncoding(config.bodyLimitBytes));
  app.addHook("preValidation", refuseFaultyText);

  app.addHook("onResponse", async (request, reply) => {
    endRequestSpan(request, reply.statusCode);
    deps.metrics.request(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
    const tenantHeader = request.headers["x-tenant-id"];
    logger.info("request", {
      requestId: request.id,
      traceId: request.correlation?.traceId,
      method: request.method,
      route: request.routeOptions.url ?? null,
      path: request.url.split("?")[0]?.slice(0, 300),
      status: reply.statusCode,
      tenant: request.tenant ?? (typeof tenantHeader === "string" ? tenantHeader.slice(0, 128) : null),
      userId: request.principal?.userId ?? null,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
    });
  });

  app.setErrorHandler((err: FastifyError | Error, request, reply) => sendProblem(fromHttpError(err), request, reply, logger));
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      new ProblemError("INVALID_REQUEST", `there is no route ${request.method} ${request.url.split("?")[0] ?? ""}`, { status: 404 }),
      request,
      reply,
      logger,
    ),
  );

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Process task backend",
        version: "0.1.0",
        description:
          "API Definitions, time series and Calculation Definitions, served over REST and to Camunda 7 / Zeebe workers. " +
          "Errors are application/problem+json with a code of the contract's §7.",
      },
      components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
    // Shared schemas keep their $id as their component name (`Problem`).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
  });
  app.addSchema(Problem);
  app.addHook("onRoute", (route) => documentRoute(route));

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  healthRoutes(app, deps);
  // The workers alone (role worker) serve the operations routes only.
  if (config.role === "worker") return app;
  graphRoutes(app, deps);
  apiDefinitionRoutes(app, deps);
  eventRoutes(app, deps);
  calculationRoutes(app, deps);
  await consoleRoutes(app);
  // Streams close their sockets themselves (1001) before the server closes: the plugin's own close is a no-op.
  await app.register(websocket, { options: { maxPayload: 64 * 1024 }, preClose: (done) => done() });
  streamRoutes(app, deps);
  return app;
}

/**
 * Completes a route's description: what its caller may leave out (a query parameter with a default),
 * and for a protected route the bearer scheme, the required tenant header and its error answers,
 * every one `application/problem+json` (the `Problem` component).
 */
function documentRoute(route: { method: string | string[]; url: string; config?: { access?: Access }; schema?: object }): void {
  if (route.schema === undefined) return;
  const schema = route.schema as Record<string, unknown>;
  const querystring = schema.querystring as { properties?: Record<string, { default?: unknown }>; required?: string[] } | undefined;
  if (querystring?.required !== undefined && querystring.properties !== undefined) {
    const properties = querystring.properties;
    schema.querystring = { ...querystring, required: querystring.required.filter((name) => properties[name]?.default === undefined) };
  }
  const access = route.config?.access ?? "public";
  const errors = errorStatuses(route, access);
  if (access !== "public") {
    schema.security = [{ bearerAuth: [] }];
    const headers = (schema.headers as { type?: string; properties?: Record<string, unknown>; required?: string[] } | undefined) ?? { type: "object", properties: {} };
    schema.headers = {
      ...headers,
      properties: { ...headers.properties, "x-tenant-id": { type: "string", minLength: 1, maxLength: 128, description: "Tenant the request acts in; one the token names" } },
      // A stream may take its tenant from its first message instead (browsers cannot set headers).
      required: access === "stream" ? (headers.required ?? []) : [...new Set([...(headers.required ?? []), "x-tenant-id"])],
    };
  }
  const problem = { content: { "application/problem+json": { schema: { $ref: "Problem#" } } } };
  schema.response = {
    ...(schema.response as object | undefined),
    ...Object.fromEntries(errors.map(([status, description]) => [status, { description, ...problem }])),
  };
}

/** The error statuses an operation can answer, by what it takes: a token, path parameters, a body. */
function errorStatuses(route: { method: string | string[]; url: string }, access: Access): [number, string][] {
  if (access === "public") {
    return [
      [400, "the request is not valid (a malformed URL, text that is not valid Unicode, a refused key)"],
      [503, "the database or an engine does not answer, or the service is shutting down"],
    ];
  }
  if (access === "stream") {
    return [
      [400, "a path or query parameter is not valid"],
      [404, "the path does not name a route (a path parameter that is not a uuid)"],
      [414, "a path parameter is longer than the longest a route takes"],
      [426, "the request is not a WebSocket upgrade"],
      [503, "the service is shutting down"],
    ];
  }
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  const hasBody = methods.some((m) => m === "POST" || m === "PUT" || m === "PATCH");
  const statuses: [number, string][] = [
    [400, "the request is not valid (MISSING_TENANT, INVALID_REQUEST, …)"],
    [401, "no token, or one that is not valid"],
    [403, "the token does not name the tenant, or lacks the admin role"],
    [404, "a row the request names does not exist in this tenant"],
  ];
  if (route.url.includes(":")) statuses.push([414, "a path parameter is longer than the longest a route takes"]);
  if (hasBody) statuses.push([409, "a conflict with a stored row (a duplicate externalId, an inactive definition)"], [413, "the body (decoded) is larger than BODY_LIMIT_BYTES, or an upload's line larger than UPLOAD_LINE_LIMIT_BYTES"], [415, "the Content-Type, its charset or the Content-Encoding is not accepted"], [422, "a transform or calculation failed"]);
  statuses.push([503, "the database is not reachable, or the service is busy or shutting down"]);
  return statuses;
}

/** Maps fastify's own errors (validation, body parsing, limits) to a problem; everything else via toProblemError. */
function fromHttpError(err: FastifyError | Error): ProblemError {
  if (err instanceof ProblemError) return err;
  const fe = err as FastifyError;
  if (fe.validation !== undefined) {
    const errors: ProblemDetail[] = fe.validation.map((v) => {
      const extra = typeof v.params.additionalProperty === "string" ? `/${v.params.additionalProperty}` : "";
      return {
        path: `${fe.validationContext ?? "body"}${(v.instancePath + extra).replace(/\//g, ".")}`,
        message: extra !== "" ? "is not a known property" : (v.message ?? "is not valid"),
      };
    });
    return new ProblemError("INVALID_REQUEST", `the request ${fe.validationContext ?? "body"} is not valid: ${errors[0]?.path} ${errors[0]?.message}`, {
      errors,
    });
  }
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500 && typeof fe.code === "string" && fe.code.startsWith("FST_")) {
    return new ProblemError("INVALID_REQUEST", describeFastifyError(fe), { status: fe.statusCode });
  }
  if (err instanceof SyntaxError && fe.statusCode === 400) {
    return new ProblemError("INVALID_REQUEST", `the body is not valid JSON: ${err.message}`);
  }
  return toProblemError(err);
}

function describeFastifyError(fe: FastifyError): string {
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return "the request body is larger than the limit (BODY_LIMIT_BYTES)";
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return "unsupported Content-Type; send application/json";
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return "the body is empty but Content-Type is application/json";
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return `the body is not valid JSON: ${fe.message}`;
    default:
      return fe.message;
  }
}

/**
 * Answers a problem. The caller never sees SQL or a database's own message (see callerProblem):
 * those are logged here with the request id, which is all an operator needs to find them.
 */
/** How long the rest of a body no longer wanted is read and dropped before its connection is closed. */
const DRAIN_MS = 2000;

/**
 * A request answered before its body was read to the end (a streamed upload that failed part-way):
 * the rest is read and dropped, so the client is not blocked on a full socket and reads the answer;
 * if it still sends after {@link DRAIN_MS}, the connection is closed. Closing at once would reset
 * it with unread data, and the client could lose the answer with it.
 */
function drainThenClose(raw: FastifyRequest["raw"]): void {
  if (raw.complete) return;
  const timer = setTimeout(() => raw.socket.destroy(), DRAIN_MS);
  timer.unref();
  raw.once("end", () => clearTimeout(timer));
  // A decoder it was piped into (Content-Encoding) would pause it again: the rest is read here alone.
  raw.unpipe();
  raw.resume();
}

function sendProblem(problem: ProblemError, request: FastifyRequest, reply: FastifyReply, logger: Logger): FastifyReply {
  const cause = problem.cause instanceof Error ? problem.cause : undefined;
  const database = databaseCause(problem);
  const traceId = request.correlation?.traceId;
  if (problem.code === "INTERNAL_ERROR") {
    logger.error("request failed", { requestId: request.id, traceId, code: problem.code, error: cause?.message, stack: cause?.stack });
  } else if (problem.status >= 500 || database !== undefined) {
    const error = database?.message ?? cause?.message ?? problem.message;
    logger.warn("request failed", { requestId: request.id, traceId, code: problem.code, status: problem.status, detail: problem.message, error });
  }
  // `complete` is false only on a real connection whose body was not read to its end (an injected request has none).
  if ((request.raw.complete as boolean | undefined) === false) reply.raw.once("finish", () => drainThenClose(request.raw));
  return reply
    .status(problem.status)
    .header("x-request-id", request.id)
    .type("application/problem+json")
    .send(JSON.stringify({ ...callerProblem(problem), requestId: request.id }));
}
