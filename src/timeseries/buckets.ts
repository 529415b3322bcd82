import { DateTime, type DurationLikeObject } from "luxon";
import { ProblemError } from "../errors.js";

export const INTERVALS = ["5 minute", "10 minute", "15 minute", "20 minute", "30 minute", "Hourly", "Daily", "Weekly", "Monthly", "Quarterly", "Yearly"] as const;
export type Interval = (typeof INTERVALS)[number];

type Calendar = "day" | "week" | "month" | "quarter" | "year";

/** Fixed-length intervals in minutes; calendar intervals by the unit they start on. */
const FIXED_MINUTES: Partial<Record<Interval, number>> = { "5 minute": 5, "10 minute": 10, "15 minute": 15, "20 minute": 20, "30 minute": 30, Hourly: 60 };
const CALENDAR: Partial<Record<Interval, { unit: Calendar; step: DurationLikeObject }>> = {
  Daily: { unit: "day", step: { days: 1 } },
  Weekly: { unit: "week", step: { weeks: 1 } },
  Monthly: { unit: "month", step: { months: 1 } },
  Quarterly: { unit: "quarter", step: { quarters: 1 } },
  Yearly: { unit: "year", step: { years: 1 } },
};

export function checkInterval(interval: string): Interval {
  if (!(INTERVALS as readonly string[]).includes(interval)) {
    const message = `unknown aggregation.interval "${interval}"; one of: ${INTERVALS.join(", ")}`;
    throw new ProblemError("INVALID_REQUEST", message, { errors: [{ path: "queryOptions.aggregation.interval", message }] });
  }
  return interval as Interval;
}

/** Length of a fixed interval in milliseconds; undefined for calendar intervals. */
export function fixedLengthMs(interval: Interval): number | undefined {
  const minutes = FIXED_MINUTES[interval];
  return minutes === undefined ? undefined : minutes * 60_000;
}

/**
 * Start of the bucket holding instant `t` (shared/SEMANTICS.md): calendar buckets start at local
 * midnight of the zone's day, Monday, first of month, quarter or year; fixed buckets where the
 * local wall-clock time is a multiple of their length, and last exactly that length.
 */
export function bucketStart(t: number, interval: Interval, zone: string): number {
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) {
    // Offsets change by whole hours, a multiple of every fixed length: flooring the local time
    // with the offset in force at t lands on an instant of that same offset.
    const offsetMs = DateTime.fromMillis(t, { zone }).offset * 60_000;
    return Math.floor((t + offsetMs) / fixed) * fixed - offsetMs;
  }
  return DateTime.fromMillis(t, { zone }).startOf(CALENDAR[interval]!.unit).toMillis();
}

/** The start of the bucket after the one starting at `start`. */
export function nextBucketStart(start: number, interval: Interval, zone: string): number {
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) return start + fixed;
  return DateTime.fromMillis(start, { zone }).plus(CALENDAR[interval]!.step).toMillis();
}

/** Every bucket start of `[from, to)`, in order, the first one holding `from`. */
export function bucketStarts(from: number, to: number, interval: Interval, zone: string, maxBuckets = 100_000): number[] {
  const starts: number[] = [];
  for (let start = bucketStart(from, interval, zone); start < to; start = nextBucketStart(start, interval, zone)) {
    starts.push(start);
    if (starts.length > maxBuckets) {
      const message = `the range holds more than ${maxBuckets} ${interval} buckets; choose a longer interval or a shorter range`;
      throw new ProblemError("INVALID_REQUEST", message, { errors: [{ path: "queryOptions.aggregation.interval", message }] });
    }
  }
  return starts;
}
