import { createAkimaSplineInterpolator, createCubicSplineInterpolator, createLinearInterpolator, createLoessInterpolator } from "commons-math-interpolation";

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
      return createLoessInterpolator({
        xVals: xs,
        yVals: ys,
        bandwidthFraction: LOESS_BANDWIDTH,
        robustnessIters: LOESS_ROBUSTNESS_ITERATIONS,
        interpolationMethod: "cubic",
      });
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
