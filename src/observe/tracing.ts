import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from "@opentelemetry/api";
import type { Env } from "../config/environment.js";
import { ProblemError } from "../errors.js";

/**
 * OpenTelemetry traces (docs/reference/observability.md#traces), set up only by the standard
 * `OTEL_*` variables: with none of them the SDK is never loaded, and every span below is the API's
 * no-op one (a few calls of nothing per request).
 */

/** The name of this service's tracer and its default `service.name`. */
export const SERVICE_NAME = "process-task-backend";

const tracer = trace.getTracer(SERVICE_NAME);

/** Which exporters `OTEL_TRACES_EXPORTER` asks for; `otlp` when only an endpoint is set. */
export function tracesExporters(env: Env): ("otlp" | "console")[] {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return [];
  const named = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((e) => e.trim().toLowerCase()).filter((e) => e !== "");
  if (named.includes("none")) return [];
  if (named.length > 0) return named.filter((e): e is "otlp" | "console" => e === "otlp" || e === "console");
  const endpoint = [env.OTEL_EXPORTER_OTLP_ENDPOINT, env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT].some((v) => v !== undefined && v.trim() !== "");
  return endpoint ? ["otlp"] : [];
}

/** What {@link startTracing} started: flushes and stops the exporter at shutdown. */
export interface Tracing {
  shutdown(): Promise<void>;
}

/**
 * Loads the SDK and registers a tracer provider (W3C trace context propagation, batched OTLP/HTTP
 * export, `service.name` from `OTEL_SERVICE_NAME`, sampling from `OTEL_TRACES_SAMPLER`) when the
 * environment asks for traces; undefined, with nothing loaded, when it does not.
 */
export async function startTracing(env: Env): Promise<Tracing | undefined> {
  const exporters = tracesExporters(env);
  if (exporters.length === 0) return undefined;
  const [sdk, resources] = await Promise.all([import("@opentelemetry/sdk-trace-node"), import("@opentelemetry/resources")]);
  const spanProcessors = [];
  if (exporters.includes("otlp")) {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    spanProcessors.push(new sdk.BatchSpanProcessor(new OTLPTraceExporter()));
  }
  if (exporters.includes("console")) spanProcessors.push(new sdk.SimpleSpanProcessor(new sdk.ConsoleSpanExporter()));
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ "service.name": SERVICE_NAME }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.NodeTracerProvider({ resource, spanProcessors });
  provider.register();
  return { shutdown: () => provider.shutdown() };
}

/** The context a W3C `traceparent` (and `tracestate`) names, from a request's headers or a process variable. */
export function contextFrom(carrier: { traceparent?: unknown; tracestate?: unknown }): Context {
  const headers: Record<string, string> = {};
  if (typeof carrier.traceparent === "string") headers.traceparent = carrier.traceparent;
  if (typeof carrier.tracestate === "string") headers.tracestate = carrier.tracestate;
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** A span begun now under `parent`, which the caller ends; a no-op span when tracing is off. */
export function beginSpan(name: string, parent: Context, attributes: Attributes, kind: SpanKind = SpanKind.INTERNAL): Span {
  return tracer.startSpan(name, { kind, attributes }, parent);
}

/** Marks a span failed by `err` (a 4xx problem is the caller's: recorded, not an error of the span's). */
export function failSpan(span: Span, err: unknown): void {
  if (err instanceof ProblemError && err.isClientProblem) {
    span.setAttribute("problem.code", err.code);
    return;
  }
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** Runs `fn` in a child span of the current one, named `name`; the span ends when `fn` settles. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracer.startSpan(name, { attributes });
  if (!span.isRecording()) return fn(span);
  try {
    return await context.with(trace.setSpan(context.active(), span), () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

export { context, SpanKind, trace };
