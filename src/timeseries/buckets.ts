import { ProblemError } from "../errors.js";
import { periodIndex, periodStartLocal, type CalendarUnit } from "./calendar.js";
import { localToInstant, offsetMs } from "./zone-offset.js";

export const INTERVALS = ["5 minute", "10 minute", "15 minute", "20 minute", "30 minute", "Hourly", "Daily", "Weekly", "Monthly", "Quarterly", "Yearly"] as const;
export type Interval = (typeof INTERVALS)[number];

/** Fixed-length intervals in minutes; calendar intervals by the period they start. */
const FIXED_MINUTES: Partial<Record<Interval, number>> = { "5 minute": 5, "10 minute": 10, "15 minute": 15, "20 minute": 20, "30 minute": 30, Hourly: 60 };
const CALENDAR: Partial<Record<Interval, CalendarUnit>> = { Daily: "day", Weekly: "week", Monthly: "month", Quarterly: "quarter", Yearly: "year" };

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

/** The calendar period a calendar interval's buckets are; undefined for fixed intervals. */
export function calendarUnit(interval: Interval): CalendarUnit | undefined {
  return CALENDAR[interval];
}

/** Index of the calendar period holding instant `t`, read on the zone's wall clock. */
export function calendarPeriod(t: number, unit: CalendarUnit, zone: string): number {
  return periodIndex(t + offsetMs(zone, t), unit);
}

/** The instant a calendar period starts: the first instant of its local midnight (a skipped midnight: the change). */
export function calendarPeriodStart(index: number, unit: CalendarUnit, zone: string): number {
  return localToInstant(zone, periodStartLocal(index, unit));
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
    const offset = offsetMs(zone, t);
    return Math.floor((t + offset) / fixed) * fixed - offset;
  }
  const unit = CALENDAR[interval]!;
  return calendarPeriodStart(calendarPeriod(t, unit, zone), unit, zone);
}

/** The start of the bucket after the one starting at `start`. */
export function nextBucketStart(start: number, interval: Interval, zone: string): number {
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) return start + fixed;
  const unit = CALENDAR[interval]!;
  return calendarPeriodStart(calendarPeriod(start, unit, zone) + 1, unit, zone);
}
