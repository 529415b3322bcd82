import type { Span } from "@opentelemetry/api";
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import { traceIdFor, withCorrelation } from "../observe/correlation.js";
import { beginSpan, context, contextFrom, SpanKind, trace } from "../observe/tracing.js";

/**
 * onRequest, first of the hooks (callback style, so that the rest of the request's course runs
 * inside it): the request id in the answer's `X-Request-Id`, a server span continuing the caller's
 * W3C `traceparent`, and both ids on every log line written while the request is served.
 */
export function startRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const parent = contextFrom({ traceparent: request.headers.traceparent, tracestate: request.headers.tracestate });
  const route = request.routeOptions.url;
  const span: Span = beginSpan(route === undefined ? request.method : `${request.method} ${route}`, parent, {
    "http.request.method": request.method,
    "url.path": request.url.split("?")[0]?.slice(0, 300) ?? "",
    ...(route !== undefined ? { "http.route": route } : {}),
    "request.id": request.id,
  }, SpanKind.SERVER);
  const active = trace.setSpan(parent, span);
  request.span = span;
  request.correlation = { requestId: request.id, traceId: traceIdFor(active, request.headers.traceparent) };
  reply.header("x-request-id", request.id);
  context.with(active, () => withCorrelation(request.correlation!, done));
}

/** onResponse: the request's span ends with its status (a 5xx marks it failed). */
export function endRequestSpan(request: FastifyRequest, status: number): void {
  const span = request.span;
  if (span === undefined) return;
  span.setAttribute("http.response.status_code", status);
  if (request.tenant !== undefined) span.setAttribute("tenant", request.tenant);
  if (status >= 500) span.setStatus({ code: 2 });
  span.end();
}
