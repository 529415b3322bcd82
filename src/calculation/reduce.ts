export const REDUCE_TYPES = ["percentile10", "percentile25", "percentile50", "percentile75", "percentile90", "sum", "avg", "stddev", "mad", "median", "count", "max", "min"] as const;
export type ReduceType = (typeof REDUCE_TYPES)[number];

/** Linear interpolation between closest ranks at position (n − 1)·p/100 (PostgreSQL percentile_cont); values sorted. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const position = ((sorted.length - 1) * p) / 100;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

/**
 * One value from a series' values (shared/SEMANTICS.md §Reductions): percentiles and the median by
 * linear interpolation, the sample standard deviation (n − 1; one value gives 0), the median absolute
 * deviation unscaled. Empty input: count 0, sum 0, everything else null.
 */
export function reduceValues(values: readonly number[], type: ReduceType): number | null {
  const n = values.length;
  switch (type) {
    case "count":
      return n;
    case "sum":
      return values.reduce((a, b) => a + b, 0);
    default:
      break;
  }
  if (n === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  switch (type) {
    case "avg":
      return values.reduce((a, b) => a + b, 0) / n;
    case "min":
      return sorted[0]!;
    case "max":
      return sorted[n - 1]!;
    case "median":
      return percentile(sorted, 50);
    case "stddev": {
      if (n === 1) return 0;
      const mean = values.reduce((a, b) => a + b, 0) / n;
      return Math.sqrt(values.reduce((acc, v) => acc + (v - mean) * (v - mean), 0) / (n - 1));
    }
    case "mad": {
      const median = percentile(sorted, 50)!;
      return percentile(
        values.map((v) => Math.abs(v - median)).sort((a, b) => a - b),
        50,
      );
    }
    default:
      return percentile(sorted, Number(type.slice("percentile".length)));
  }
}
