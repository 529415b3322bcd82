import { readFileSync } from "node:fs";
import { expect } from "chai";
import { fillGaps, type Bucket, type GapStrategy } from "../../src/timeseries/gaps.js";
import type { Algorithm } from "../../src/timeseries/interpolation.js";

const HOUR = 3_600_000;
const series = (values: (number | null)[], step = HOUR): Bucket[] => values.map((value, i) => ({ timestamp: i * step, value }));
const values = (buckets: Bucket[]) => buckets.map((b) => b.value);
const interpolate = (algorithm: Algorithm): GapStrategy => ({ type: "interpolate", config: { algorithm } });
const close = (actual: (number | null)[], expected: (number | null)[]) => {
  expect(actual).to.have.length(expected.length);
  actual.forEach((v, i) => {
    if (expected[i] === null) expect(v, `bucket ${i}`).to.equal(null);
    else expect(v, `bucket ${i}`).to.be.closeTo(expected[i]!, 1e-9);
  });
};

describe("gap strategies", () => {
  const gappy = series([null, 1, null, null, 4, null]);

  it("leaves gaps null without a strategy, and never changes its input", () => {
    expect(values(fillGaps(gappy, undefined))).to.deep.equal([null, 1, null, null, 4, null]);
    fillGaps(gappy, { type: "push" });
    expect(values(gappy)).to.deep.equal([null, 1, null, null, 4, null]);
  });

  it("push carries the value before forward, also past the end", () => {
    expect(values(fillGaps(gappy, { type: "push" }))).to.deep.equal([null, 1, 1, 1, 4, 4]);
  });

  it("pull carries the value after back, also before the start", () => {
    expect(values(fillGaps(gappy, { type: "pull" }))).to.deep.equal([1, 1, 4, 4, 4, null]);
  });

  it("meet takes L up to the fraction of the way to R, then R; 1 acts as push and 0 as pull inside", () => {
    expect(values(fillGaps(gappy, { type: "meet", config: { meet: 0.5 } }))).to.deep.equal([null, 1, 1, 4, 4, null]);
    expect(values(fillGaps(gappy, { type: "meet", config: { meet: 1 } }))).to.deep.equal([null, 1, 1, 1, 4, null]);
    expect(values(fillGaps(gappy, { type: "meet", config: { meet: 0 } }))).to.deep.equal([null, 1, 4, 4, 4, null]);
    expect(values(fillGaps(gappy, { type: "meet", config: { meet: 1 / 3 } }))).to.deep.equal([null, 1, 1, 4, 4, null]);
  });

  it("interpolates linearly between the neighbours, leaving leading and trailing gaps", () => {
    close(values(fillGaps(gappy, interpolate("linear"))), [null, 1, 2, 3, 4, null]);
  });

  it("interpolates with a natural cubic spline", () => {
    // Knots (0,0), (1,1), (2,0): second derivative −3 at 1, zero at the ends; S(0.5) = −3/48 + 3/4.
    close(values(fillGaps(series([0, null, 1, null, 0], HOUR / 2), interpolate("spline"))), [0, 0.6875, 1, 0.6875, 0]);
  });

  it("interpolates with the one polynomial through all knots, by Neville and by divided differences", () => {
    // Knots of x² at 0, 1, 2 and 3 hours.
    const squares = series([0, null, 1, null, 4, null, 9], HOUR / 2);
    close(values(fillGaps(squares, interpolate("neville"))), [0, 0.25, 1, 2.25, 4, 6.25, 9]);
    close(values(fillGaps(squares, interpolate("dividedDifference"))), [0, 0.25, 1, 2.25, 4, 6.25, 9]);
  });

  it("interpolates with an Akima spline from five knots, exactly on a line", () => {
    close(values(fillGaps(series([1, null, 5, 7, null, 11, 13, 15]), interpolate("akimaSpline"))), [1, 3, 5, 7, 9, 11, 13, 15]);
  });

  it("smooths with loess from seven knots: a line stays that line, knots included", () => {
    const line = series([0, 2, null, 6, 8, null, 12, 14, 16, 18]);
    close(values(fillGaps(line, interpolate("loess"))), [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]);
  });

  it("leaves gaps null when there are fewer knots than the algorithm needs", () => {
    expect(values(fillGaps(series([1, null, 2]), interpolate("spline")))).to.deep.equal([1, null, 2]);
    expect(values(fillGaps(series([1, null, 2, 3, 4]), interpolate("akimaSpline")))).to.deep.equal([1, null, 2, 3, 4]);
    expect(values(fillGaps(series([1, null, 2, 3, 4, 5, 6]), interpolate("loess")))).to.deep.equal([1, null, 2, 3, 4, 5, 6]);
    expect(values(fillGaps(series([null, 1, null]), interpolate("linear")))).to.deep.equal([null, 1, null]);
  });
});

describe("interpolation against Apache Commons Math 3.6.1", () => {
  // test/reference/commons-math/generate writes this file with the Java library itself.
  type Case = Record<string, number[]> & { knots: { x: number[]; y: number[] } };
  const { cases } = JSON.parse(readFileSync(new URL("../../../test/timeseries/commons-math-reference.json", import.meta.url), "utf8")) as { cases: Case[] };

  cases.forEach((reference, c) => {
    const last = reference.knots.x[reference.knots.x.length - 1]!;
    const hours = Array.from({ length: last + 1 }, (_, h) => h);
    const knotAt = new Map(reference.knots.x.map((x, i) => [x, reference.knots.y[i]!]));
    const buckets = hours.map((h) => ({ timestamp: Date.UTC(2024, 0, 1) + h * HOUR, value: knotAt.get(h) ?? null }));
    for (const algorithm of ["linear", "spline", "akimaSpline", "loess", "neville", "dividedDifference"] as const) {
      it(`${algorithm} gives Commons Math's values, ${reference.knots.x.length} knots over ${last} hours (case ${c + 1})`, () => {
        const filled = values(fillGaps(buckets, interpolate(algorithm)));
        const expected = reference[algorithm]!;
        hours.forEach((h) => {
          // Knots keep their value; loess smooths them, so those are compared too.
          const want = knotAt.has(h) && algorithm !== "loess" ? knotAt.get(h)! : expected[h]!;
          expect(filled[h], `hour ${h}`).to.be.closeTo(want, 1e-9 * Math.max(1, Math.abs(want)));
        });
      });
    }
  });
});
