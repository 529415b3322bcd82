import { Duration } from "luxon";

/** The task header (Zeebe custom header) a model sets the back-off of its task's failures with, as Camunda's connectors do. */
export const RETRY_BACKOFF_HEADER = "retryBackoff";

/** What a `retryBackoff` header says: nothing (the worker's default back-off), a back-off, or a value that is not one and why. */
export type RetryBackoff = { kind: "default" } | { kind: "fixed"; ms: number } | { kind: "invalid"; value: string; reason: string };

/**
 * Reads a `retryBackoff` header: an ISO-8601 duration (`PT3S`, `PT1M30S`, `P1DT2H`, `PT0.5S`,
 * `P2W`), the time a failed task waits before it is tried again. Absent or blank: the default
 * back-off. Years and months are refused (their length is not fixed), as are negative durations
 * and a bare `P`/`PT`; the transport then keeps its default back-off and logs a warning.
 */
export function parseRetryBackoff(value: unknown): RetryBackoff {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) return { kind: "default" };
  const text = typeof value === "string" ? value.trim() : JSON.stringify(value);
  const invalid = (reason: string): RetryBackoff => ({ kind: "invalid", value: text.slice(0, 100), reason });
  if (typeof value !== "string") return invalid("must be text: an ISO-8601 duration such as PT3S");
  const duration = Duration.fromISO(text);
  if (!duration.isValid) return invalid("is not an ISO-8601 duration (for example PT3S, PT1M30S, P1DT2H)");
  const parts = duration.toObject();
  if (Object.keys(parts).length === 0) return invalid("names no amount of time (for example PT3S)");
  if (parts.years !== undefined || parts.months !== undefined) return invalid("uses years or months, whose length is not fixed: use weeks, days, hours, minutes or seconds");
  if (Object.values(parts).some((amount) => amount < 0)) return invalid("is negative");
  const ms = Math.round(duration.toMillis());
  if (!Number.isSafeInteger(ms)) return invalid("is too long");
  return { kind: "fixed", ms };
}
