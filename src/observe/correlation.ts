import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, randomUUID } from "node:crypto";
import { trace, type Context } from "@opentelemetry/api";

/**
 * What every log line of one request or one task carries (docs/reference/observability.md#logs):
 * its request id, its trace id, and for a task the engine's keys. Held in an AsyncLocalStorage for
 * the request's or task's whole course, so a line written anywhere beneath (a service, the
 * database layer) carries them without being handed them.
 */
export interface Correlation {
  requestId: string;
  traceId: string;
  /** A task's fields: the engine's task/job key, process-instance key and BPMN process id. */
  fields?: Record<string, string | number>;
}

const store = new AsyncLocalStorage<Correlation>();

/** The correlation of the request or task running now; undefined outside one. */
export function currentCorrelation(): Correlation | undefined {
  return store.getStore();
}

/** Runs `fn` with `correlation` as the current one (and returns what it returns). */
export function withCorrelation<T>(correlation: Correlation, fn: () => T): T {
  return store.run(correlation, fn);
}

/** The request ids a caller may send in `X-Request-Id`: 1 to 128 of letters, digits and `. _ : -`. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's `X-Request-Id` when it is a valid one, else a new uuid. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && REQUEST_ID_PATTERN.test(value) ? value : randomUUID();
}

/** W3C trace context: version 00, a 32-hex trace id (not all zeros), a 16-hex parent id, flags. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The trace id of a valid W3C `traceparent`, else undefined. */
export function traceIdOfTraceparent(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (match === null || match[1] === "ff" || /^0+$/.test(match[2]!) || /^0+$/.test(match[3]!)) return undefined;
  return match[2];
}

/**
 * The trace id a request's or task's lines carry: its span's when tracing is on, else the one of
 * the `traceparent` it came with, else a new one (so lines of one unit of work always share one).
 */
export function traceIdFor(context: Context, traceparent: unknown): string {
  const span = trace.getSpanContext(context);
  if (span !== undefined && trace.isSpanContextValid(span)) return span.traceId;
  return traceIdOfTraceparent(traceparent) ?? randomBytes(16).toString("hex");
}
