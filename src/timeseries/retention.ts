import { invalidRequest } from "../errors.js";
import { retentionHorizon } from "../db/partitions.js";

/** What a series read tells beside its answer. */
export interface QueryNotes {
  /**
   * The retention horizon (ISO-8601), when the range starts before it: events before it may be
   * gone, so the answer's buckets or events before it are not to be trusted. The HTTP answer
   * carries it as the header `Events-Retained-From`.
   */
  eventsRetainedFrom?: string;
}

/** The answer header that carries {@link QueryNotes.eventsRetainedFrom}. */
export const RETAINED_FROM_HEADER = "Events-Retained-From";

/**
 * The one place that decides what a read of raw events over `span` (the part of a range read from
 * raw events; undefined when the rollups answer all of it) answers when EVENTS_RETENTION_DAYS has
 * dropped events: a span that ends at or before the horizon is a `422` naming it, never a silent
 * empty answer; a span that starts before it is answered, noted in `notes`. An aggregation the
 * rollups tile reads no raw events there, and is answered whole (docs/reference/time-series.md).
 */
export function checkRetention(span: { from: number; to: number } | undefined, retentionDays: number | undefined, now: Date, notes?: QueryNotes): void {
  const horizon = retentionHorizon(retentionDays, now);
  if (span === undefined || horizon === undefined || span.from >= horizon.getTime()) return;
  const at = horizon.toISOString();
  if (span.to <= horizon.getTime()) {
    throw invalidRequest(
      `the range ends before ${at}, the retention horizon (events are kept ${retentionDays} days, EVENTS_RETENTION_DAYS): its events have been dropped`,
      "eventDateRange",
      422,
    );
  }
  if (notes !== undefined) notes.eventsRetainedFrom = at;
}

/**
 * The first instant whose raw events are all kept under the retention: the first of the UTC month
 * holding the horizon (the upkeep drops whole months). The rollups of days before it are not
 * rebuilt from the events any more (rollup-store.ts, reconcile).
 */
export function rollupFloor(retentionDays: number | undefined, now: Date): Date | undefined {
  const horizon = retentionHorizon(retentionDays, now);
  return horizon === undefined ? undefined : new Date(Date.UTC(horizon.getUTCFullYear(), horizon.getUTCMonth(), 1));
}
