import { createAkimaSplineInterpolator, createCubicSplineInterpolator, createLinearInterpolator } from "commons-math-interpolation";

export const ALGORITHMS = ["linear", "spline", "loess", "neville", "akimaSpline", "dividedDifference"] as const;
export type Algorithm = (typeof ALGORITHMS)[number];

export type UnivariateFunction = (x: number) => number;

/** Fewest knots each algorithm works with (shared/SEMANTICS.md); loess also needs 0.3·n ≥ 2. */
export const MIN_KNOTS: Record<Algorithm, number> = { linear: 2, spline: 3, akimaSpline: 5, loess: 7, neville: 2, dividedDifference: 2 };
export const LOESS_BANDWIDTH = 0.3;
export const LOESS_ROBUSTNESS_ITERATIONS = 2;

/**
 * The interpolating function of an algorithm through the knots `(xs[i], ys[i])`, xs strictly
 * increasing, as Apache Commons Math defines it: linear, natural cubic spline, Akima spline, loess
 * (bandwidth 0.3, 2 robustness iterations, then a natural cubic spline through the smoothed
 * points), and the single interpolating polynomial by Neville's algorithm or by Newton's divided
 * differences. Undefined when there are fewer knots than the algorithm needs.
 */
export function interpolator(algorithm: Algorithm, xs: number[], ys: number[]): UnivariateFunction | undefined {
  if (xs.length < MIN_KNOTS[algorithm]) return undefined;
  switch (algorithm) {
    case "linear":
      return createLinearInterpolator(xs, ys);
    case "spline":
      return createCubicSplineInterpolator(xs, ys);
    case "akimaSpline":
      return createAkimaSplineInterpolator(xs, ys);
    case "loess":
      if (Math.floor(LOESS_BANDWIDTH * xs.length) < 2) return undefined;
      return createCubicSplineInterpolator(xs, loessSmooth(xs, ys, LOESS_BANDWIDTH, LOESS_ROBUSTNESS_ITERATIONS));
    case "neville":
      return nevilleInterpolator(xs, ys);
    case "dividedDifference":
      return dividedDifferenceInterpolator(xs, ys);
  }
}

/** Neville's algorithm: the interpolating polynomial's value at x, built anew for each x (O(n²)). */
export function nevilleInterpolator(xs: number[], ys: number[]): UnivariateFunction {
  const n = xs.length;
  return (x) => {
    const p = ys.slice();
    for (let level = 1; level < n; level++) {
      for (let i = 0; i < n - level; i++) {
        const xi = xs[i]!;
        const xj = xs[i + level]!;
        p[i] = ((x - xj) * p[i]! + (xi - x) * p[i + 1]!) / (xi - xj);
      }
    }
    return p[0]!;
  };
}

/** Newton's form: divided-difference coefficients once (O(n²)), then Horner-like evaluation (O(n)). */
export function dividedDifferenceInterpolator(xs: number[], ys: number[]): UnivariateFunction {
  const n = xs.length;
  const coefficients = ys.slice();
  for (let level = 1; level < n; level++) {
    for (let i = n - 1; i >= level; i--) {
      coefficients[i] = (coefficients[i]! - coefficients[i - 1]!) / (xs[i]! - xs[i - level]!);
    }
  }
  return (x) => {
    let value = coefficients[n - 1]!;
    for (let i = n - 2; i >= 0; i--) value = value * (x - xs[i]!) + coefficients[i]!;
    return value;
  };
}

const LOESS_ACCURACY = 1e-12;

function tricube(x: number): number {
  const a = Math.abs(x);
  if (a >= 1) return 0;
  const t = 1 - a * a * a;
  return t * t * t;
}

/**
 * Robust locally weighted linear regression (Cleveland's loess) at every knot, as Apache Commons
 * Math's LoessInterpolator computes it: a window of ⌊bandwidth·n⌋ nearest points slid along x,
 * tricube distance weights, then `robustnessIterations` reweightings by the bisquare of the
 * residuals over six medians. (The npm port rounds the window size instead of truncating it, so
 * its values differ from Apache's; this one matches them, see the reference test.)
 */
export function loessSmooth(xs: number[], ys: number[], bandwidth: number, robustnessIterations: number): number[] {
  const n = xs.length;
  if (n <= 2) return ys.slice();
  const window = Math.floor(bandwidth * n);
  if (window < 2) throw new Error(`loess needs bandwidth × knots ≥ 2, got ${bandwidth} × ${n}`);
  const fitted = new Array<number>(n).fill(0);
  const residuals = new Array<number>(n).fill(0);
  const robustness = new Array<number>(n).fill(1);
  for (let iteration = 0; iteration <= robustnessIterations; iteration++) {
    let left = 0;
    let right = window - 1;
    for (let i = 0; i < n; i++) {
      const x = xs[i]!;
      // Slide the window right while its next point is nearer to x than its leftmost one.
      if (i > 0 && right + 1 < n && xs[right + 1]! - x < x - xs[left]!) {
        left++;
        right++;
      }
      const edge = x - xs[left]! > xs[right]! - x ? left : right;
      const denominator = Math.abs(1 / (xs[edge]! - x));
      let sumWeights = 0;
      let sumX = 0;
      let sumXSquared = 0;
      let sumY = 0;
      let sumXY = 0;
      for (let k = left; k <= right; k++) {
        const xk = xs[k]!;
        const yk = ys[k]!;
        const distance = k < i ? x - xk : xk - x;
        const w = tricube(distance * denominator) * robustness[k]!;
        const xkw = xk * w;
        sumWeights += w;
        sumX += xkw;
        sumXSquared += xk * xkw;
        sumY += yk * w;
        sumXY += yk * xkw;
      }
      const meanX = sumX / sumWeights;
      const meanY = sumY / sumWeights;
      const meanXY = sumXY / sumWeights;
      const meanXSquared = sumXSquared / sumWeights;
      const variance = meanXSquared - meanX * meanX;
      const beta = Math.sqrt(Math.abs(variance)) < LOESS_ACCURACY ? 0 : (meanXY - meanX * meanY) / variance;
      fitted[i] = beta * x + (meanY - beta * meanX);
      residuals[i] = Math.abs(ys[i]! - fitted[i]!);
    }
    if (iteration === robustnessIterations) break;
    const median = residuals.slice().sort((a, b) => a - b)[Math.floor(n / 2)]!;
    if (Math.abs(median) < LOESS_ACCURACY) break;
    for (let i = 0; i < n; i++) {
      const arg = residuals[i]! / (6 * median);
      robustness[i] = arg >= 1 ? 0 : (1 - arg * arg) * (1 - arg * arg);
    }
  }
  return fitted;
}
