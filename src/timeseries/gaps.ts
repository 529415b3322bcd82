import { invalidRequest } from "../errors.js";
import { ALGORITHMS, interpolator, type Algorithm } from "./interpolation.js";

/** One bucket of an aggregated series: its start in epoch milliseconds and its value. */
export interface Bucket {
  timestamp: number;
  value: number | null;
}

/** Spec §2.4 `aggregation.gapStrategy`. */
export interface GapStrategy {
  type: "meet" | "interpolate" | "push" | "pull";
  config?: { meet?: number; algorithm?: Algorithm };
}

const HOUR_MS = 3_600_000;

const invalid = (message: string, path: string) => invalidRequest(message, `queryOptions.aggregation.gapStrategy${path}`);

/** Checks a gap strategy's shape and values once, at the edge. */
export function checkGapStrategy(strategy: GapStrategy): GapStrategy {
  if (strategy === null || typeof strategy !== "object" || Array.isArray(strategy)) throw invalid("gapStrategy must be an object { type, config? }", "");
  if (strategy.config !== undefined && (strategy.config === null || typeof strategy.config !== "object")) throw invalid("config must be an object", ".config");
  switch (strategy.type) {
    case "push":
    case "pull":
      return strategy;
    case "meet": {
      const meet = strategy.config?.meet;
      if (typeof meet !== "number" || !(meet >= 0 && meet <= 1)) throw invalid("meet needs config.meet, a fraction from 0 to 1 (0.5 means 50%)", ".config.meet");
      return strategy;
    }
    case "interpolate": {
      const algorithm = strategy.config?.algorithm;
      if (algorithm === undefined || !(ALGORITHMS as readonly string[]).includes(algorithm)) {
        throw invalid(`interpolate needs config.algorithm, one of: ${ALGORITHMS.join(", ")}`, ".config.algorithm");
      }
      return strategy;
    }
    default:
      throw invalid(`unknown gap strategy "${(strategy as { type: string }).type}"; one of: meet, interpolate, push, pull`, ".type");
  }
}

/**
 * Fills empty buckets from the nearest non-empty ones, L before and R after (shared/SEMANTICS.md):
 * push carries L forward (also past the end), pull carries R back (also before the start), meet
 * takes L up to the fraction `meet` of the way from L to R and R after it, interpolate evaluates
 * the algorithm through the non-empty buckets. Only loess changes non-empty buckets (it smooths
 * them). Returns a new array; the input is not changed.
 */
export function fillGaps(buckets: readonly Bucket[], strategy: GapStrategy | undefined): Bucket[] {
  const out = buckets.map((b) => ({ ...b }));
  if (strategy === undefined) return out;
  const knots = out.map((b, i) => i).filter((i) => out[i]!.value !== null);
  if (knots.length === 0) return out;
  const first = knots[0]!;
  const last = knots[knots.length - 1]!;

  if (strategy.type === "push" || strategy.type === "pull") {
    const push = strategy.type === "push";
    let carried: number | null = null;
    const order = push ? out.map((_, i) => i) : out.map((_, i) => out.length - 1 - i);
    for (const i of order) {
      if (out[i]!.value !== null) carried = out[i]!.value;
      else out[i]!.value = carried;
    }
    return out;
  }

  if (strategy.type === "meet") {
    const meet = strategy.config!.meet!;
    for (let k = 0; k + 1 < knots.length; k++) {
      const l = out[knots[k]!]!;
      const r = out[knots[k + 1]!]!;
      for (let i = knots[k]! + 1; i < knots[k + 1]!; i++) {
        const p = (out[i]!.timestamp - l.timestamp) / (r.timestamp - l.timestamp);
        out[i]!.value = p <= meet ? l.value : r.value;
      }
    }
    return out;
  }

  const algorithm = strategy.config!.algorithm!;
  // x in hours from the first knot: the same functions as in milliseconds (every algorithm here
  // is unchanged by an affine change of x), without the polynomial ones losing all precision.
  const origin = out[first]!.timestamp;
  const x = (b: Bucket) => (b.timestamp - origin) / HOUR_MS;
  const f = interpolator(
    algorithm,
    knots.map((i) => x(out[i]!)),
    knots.map((i) => out[i]!.value!),
  );
  if (f === undefined) return out;
  for (let i = first; i <= last; i++) {
    if (out[i]!.value === null || algorithm === "loess") out[i]!.value = finiteOrNull(f(x(out[i]!)));
  }
  return out;
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}
