import { IANAZone } from "luxon";
import { DAY_MS } from "./calendar.js";

const formatters = new Map<string, Intl.DateTimeFormat>();
const LONG_OFFSET = /GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/**
 * The offset of `zone` from UTC at instant `t`, in milliseconds (seconds included: local mean
 * times before 1900 have them). One cached Intl formatter per zone answering only the offset
 * (`longOffset`) costs about a tenth of luxon's lookup, which reads every date field: it matters
 * when a range holds 100,000 buckets. Both read the same ICU time-zone data.
 */
export function offsetMs(zone: string, t: number): number {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" });
    formatters.set(zone, formatter);
  }
  const match = LONG_OFFSET.exec(formatter.format(t));
  if (match === null) return IANAZone.create(zone).offset(t) * 60_000;
  if (match[1] === undefined) return 0;
  const magnitude = Number(match[2]) * 3_600_000 + Number(match[3]) * 60_000 + Number(match[4] ?? 0) * 1000;
  return match[1] === "-" ? -magnitude : magnitude;
}

/**
 * The first instant of a local wall-clock time (milliseconds as if the wall clock were UTC): a
 * time the clocks pass twice is its first passing (the offset before the change), so a calendar
 * bucket starts at the first instant its local date begins (shared/SEMANTICS.md, "Edges, fixed");
 * a time the clocks skip is the change itself (the offset before it, as PostgreSQL reads it). A
 * change is looked for within a day either side (the offsets there differ); zones do not change
 * twice within two days. (PostgreSQL's `date_trunc(…, zone)` takes the *second* passing; the
 * aggregation relabels its groups with these starts.)
 */
export function localToInstant(zone: string, localMs: number): number {
  const before = offsetMs(zone, localMs - DAY_MS);
  const after = offsetMs(zone, localMs + DAY_MS);
  if (before === after) return localMs - before;
  if (offsetMs(zone, localMs - before) === before) return localMs - before;
  if (offsetMs(zone, localMs - after) === after) return localMs - after;
  return localMs - before;
}
