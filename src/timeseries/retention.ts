import { invalidRequest } from "../errors.js";
import { retentionHorizon } from "../db/partitions.js";
import type { ResolvedRange } from "./periods.js";

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
 * The one place that decides what a read of raw events over `range` answers when
 * EVENTS_RETENTION_DAYS has dropped events: a range that ends at or before the horizon is a `422`
 * naming it, never a silent empty answer; a range that starts before it is answered, noted in
 * `notes`. Rollups, once they keep the long history, answer such ranges: this check is then
 * relaxed for the reads they serve (issue 27).
 */
export function checkRetention(range: ResolvedRange, retentionDays: number | undefined, now: Date, notes?: QueryNotes): void {
  const horizon = retentionHorizon(retentionDays, now);
  if (horizon === undefined || range.from.toMillis() >= horizon.getTime()) return;
  const at = horizon.toISOString();
  if (range.to.toMillis() <= horizon.getTime()) {
    throw invalidRequest(
      `the range ends before ${at}, the retention horizon (events are kept ${retentionDays} days, EVENTS_RETENTION_DAYS): its events have been dropped`,
      "eventDateRange",
      422,
    );
  }
  if (notes !== undefined) notes.eventsRetainedFrom = at;
}
