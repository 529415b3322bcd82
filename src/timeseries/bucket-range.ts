import { ProblemError } from "../errors.js";
import { bucketStart, calendarPeriod, calendarPeriodStart, calendarUnit, fixedLengthMs, type Interval } from "./buckets.js";

/** Most buckets one range may hold; more is a 400 naming the interval. */
export const MAX_BUCKETS = 100_000;

/**
 * How many buckets `[from, to)` holds, by arithmetic alone: the first holds `from`, the last
 * holds `to − 1 ms`. Fixed intervals: whole lengths from the first start. Calendar intervals:
 * the difference of the period indexes (days, Monday weeks, months, quarters, years of the
 * zone's calendar). Exact, and two offset look-ups whatever the range, so a range far over the
 * cap is refused before anything is enumerated.
 */
export function countBuckets(from: number, to: number, interval: Interval, zone: string): number {
  if (to <= from) return 0;
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) return Math.ceil((to - bucketStart(from, interval, zone)) / fixed);
  const unit = calendarUnit(interval)!;
  return calendarPeriod(to - 1, unit, zone) - calendarPeriod(from, unit, zone) + 1;
}

/** Refuses a range of more than `maxBuckets` buckets with a 400 naming the interval; returns the count. */
export function checkBucketCount(from: number, to: number, interval: Interval, zone: string, maxBuckets = MAX_BUCKETS): number {
  const count = countBuckets(from, to, interval, zone);
  if (count > maxBuckets) {
    const message = `the range holds more than ${maxBuckets} ${interval} buckets; choose a longer interval or a shorter range`;
    throw new ProblemError("INVALID_REQUEST", message, { errors: [{ path: "queryOptions.aggregation.interval", message, buckets: count }] });
  }
  return count;
}

/**
 * Every bucket start of `[from, to)`, in order: the buckets holding `from` … `to − 1 ms`. The
 * count is checked against the cap first; then each start is computed from its own period, not
 * from the one before, so a start shifted by a clock change (a skipped midnight) does not shift
 * the ones after it.
 */
export function bucketStarts(from: number, to: number, interval: Interval, zone: string, maxBuckets = MAX_BUCKETS): number[] {
  const count = checkBucketCount(from, to, interval, zone, maxBuckets);
  const starts = new Array<number>(count);
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) {
    const first = bucketStart(from, interval, zone);
    for (let i = 0; i < count; i++) starts[i] = first + i * fixed;
    return starts;
  }
  const unit = calendarUnit(interval)!;
  const first = calendarPeriod(from, unit, zone);
  for (let i = 0; i < count; i++) starts[i] = calendarPeriodStart(first + i, unit, zone);
  return starts;
}
