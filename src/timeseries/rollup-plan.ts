import { calendarPeriod, calendarPeriodStart, calendarUnit, fixedLengthMs, type Interval } from "./buckets.js";

/**
 * Which parts of an aggregation's range the rollups answer (docs/reference/time-series.md,
 * Rollups). The range is cut into pieces, each read from the coarsest rollup that tiles it:
 * local months or days of a zone the rollups hold, then 15-minute UTC cells, and the raw events
 * for what is left at the edges (a range not on the quarter hour). A bucket may take partial
 * rows from several pieces; they are disjoint in time, so their rows merge exactly.
 */

export type Source = "raw" | "cells" | "days" | "months";

export interface Piece {
  from: number;
  to: number;
  source: Source;
}

export const CELL_MS = 15 * 60_000;

type Level = "months" | "days" | "cells";

/** What the rollups cannot answer: these go to the raw events whole. */
export interface PlanInput {
  from: number;
  to: number;
  zone: string;
  interval: Interval;
  metric: string;
  filtered: boolean;
  /** Every bucket start of the range (bucket-range.ts). */
  starts: number[];
  /** The zones whose local days and months the rollups hold. */
  zones: readonly string[];
  /** The first instant whose raw events are all kept (a retention); undefined when all are. */
  floor?: number;
  /** Answer a plan of cells alone from the cells even where the raw events are kept (tests compare both). */
  cellsOverRaw?: boolean;
}

/**
 * The pieces of the range, in time order, or undefined when the rollups cannot answer any of it:
 * `cardinality` (distinct values are not rolled up), a filter (it reads the events' fields), the
 * 5, 10 and 20-minute intervals (finer than a cell), or a bucket not starting on a quarter hour
 * (a zone's offset of the past that was not a multiple of 15 minutes) — nor should: a plan of
 * 15-minute cells alone over a range whose raw events are all kept (after `floor`).
 */
export function rollupPlan(input: PlanInput): Piece[] | undefined {
  const fixed = fixedLengthMs(input.interval);
  if (input.metric === "cardinality" || input.filtered) return undefined;
  if (fixed !== undefined && fixed % CELL_MS !== 0) return undefined;
  for (let i = 1; i < input.starts.length; i++) if (input.starts[i]! % CELL_MS !== 0) return undefined;
  const unit = calendarUnit(input.interval);
  const local = input.zones.includes(input.zone);
  const levels: Level[] =
    unit === undefined || !local ? ["cells"] : unit === "day" || unit === "week" ? ["days", "cells"] : ["months", "days", "cells"];
  const pieces = cover(input.from, input.to, levels, input.zone);
  if (!pieces.some((p) => p.source !== "raw")) return undefined;
  // A cell of 15-minute data holds one event: cells alone read as many rows as the raw events, and
  // wider ones. Where those events are still kept, the raw path answers (bench/RESULTS.md, Rollups).
  const coarse = pieces.some((p) => p.source === "days" || p.source === "months");
  if (!coarse && !input.cellsOverRaw && (input.floor === undefined || input.from >= input.floor)) return undefined;
  return pieces;
}

function cover(from: number, to: number, levels: Level[], zone: string): Piece[] {
  if (from >= to) return [];
  const [level, ...finer] = levels;
  if (level === undefined) return [{ from, to, source: "raw" }];
  let start: number;
  let end: number;
  if (level === "cells") {
    start = Math.ceil(from / CELL_MS) * CELL_MS;
    end = Math.floor(to / CELL_MS) * CELL_MS;
  } else {
    const unit = level === "months" ? "month" : "day";
    let first = calendarPeriod(from, unit, zone);
    if (calendarPeriodStart(first, unit, zone) < from) first++;
    start = calendarPeriodStart(first, unit, zone);
    end = calendarPeriodStart(calendarPeriod(to, unit, zone), unit, zone);
    if (end > to) end = start;
    // Local periods are read from cells: their bounds must be on the quarter hour.
    if (start % CELL_MS !== 0 || end % CELL_MS !== 0) return cover(from, to, finer, zone);
  }
  if (start >= end) return cover(from, to, finer, zone);
  return [...cover(from, start, finer, zone), { from: start, to: end, source: level }, ...cover(end, to, finer, zone)];
}

/** The first instant of `[from, to)` read from raw events, or undefined when the rollups answer it all. */
export function rawSpan(pieces: Piece[]): { from: number; to: number } | undefined {
  const raw = pieces.filter((p) => p.source === "raw");
  return raw.length === 0 ? undefined : { from: raw[0]!.from, to: raw[raw.length - 1]!.to };
}
