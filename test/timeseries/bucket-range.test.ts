import { expect } from "chai";
import fc from "fast-check";
import { DateTime } from "luxon";
import { ProblemError } from "../../src/errors.js";
import { bucketStarts, checkBucketCount, countBuckets, MAX_BUCKETS } from "../../src/timeseries/bucket-range.js";
import { fixedLengthMs, INTERVALS, type Interval } from "../../src/timeseries/buckets.js";

const ms = (iso: string) => Date.parse(iso);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The enumeration as it was before the count came first: luxon's start of the period, then one
 * period more at a time. Right wherever midnight is never skipped or repeated, which holds for
 * the zones and years drawn here; the reference the arithmetic count must match exactly.
 */
function luxonStarts(from: number, to: number, interval: Interval, zone: string): number[] {
  const starts: number[] = [];
  const fixed = fixedLengthMs(interval);
  if (fixed !== undefined) {
    const offset = DateTime.fromMillis(from, { zone }).offset * 60_000;
    for (let s = Math.floor((from + offset) / fixed) * fixed - offset; s < to; s += fixed) starts.push(s);
    return starts;
  }
  const calendar = { Daily: ["day", { days: 1 }], Weekly: ["week", { weeks: 1 }], Monthly: ["month", { months: 1 }], Quarterly: ["quarter", { quarters: 1 }], Yearly: ["year", { years: 1 }] } as const;
  const [unit, step] = calendar[interval as keyof typeof calendar];
  for (let d = DateTime.fromMillis(from, { zone }).startOf(unit); d.toMillis() < to; d = d.plus(step)) starts.push(d.toMillis());
  return starts;
}

/** The longest range drawn per interval: a few dozen buckets at most, so the reference stays quick. */
const MAX_SPAN: Record<Interval, number> = {
  "5 minute": 6 * HOUR, "10 minute": 12 * HOUR, "15 minute": DAY, "20 minute": DAY, "30 minute": 2 * DAY, Hourly: 3 * DAY,
  Daily: 60 * DAY, Weekly: 400 * DAY, Monthly: 5 * 366 * DAY, Quarterly: 12 * 366 * DAY, Yearly: 40 * 366 * DAY,
};

/** 01:00 UTC on the last Sunday of March or October: when Brussels changes its clocks. */
function brusselsChange(year: number, month: 3 | 10): number {
  const lastDay = Date.UTC(year, month, 0);
  return lastDay - new Date(lastDay).getUTCDay() * DAY + HOUR;
}

const zone = fc.constantFrom("Europe/Brussels", "Europe/Brussels", "UTC", "Asia/Kolkata", "America/New_York", "Australia/Sydney", "Pacific/Chatham");
const year = fc.integer({ min: 1980, max: 2100 });
/** Any instant of a year, or one within three days of a Brussels clock change (DST days weigh heavily). */
const instant = fc.oneof(
  year.chain((y) => fc.integer({ min: Date.UTC(y, 0, 1), max: Date.UTC(y + 1, 0, 1) - 1 })),
  fc.tuple(year, fc.constantFrom(3 as const, 10 as const), fc.integer({ min: -3 * DAY, max: 3 * DAY })).map(([y, m, shift]) => brusselsChange(y, m) + shift),
);
const range = fc
  .tuple(zone, fc.constantFrom(...INTERVALS), instant, fc.double({ min: 0, max: 1, noNaN: true }))
  .map(([z, interval, from, share]) => ({ zone: z, interval, from, to: from + 1 + Math.floor(share * MAX_SPAN[interval]) }));

describe("bucket count before enumeration", () => {
  it("counts exactly the buckets the enumeration gives, on random small ranges in several zones, DST days included", () => {
    fc.assert(
      fc.property(range, ({ zone, interval, from, to }) => {
        const reference = luxonStarts(from, to, interval, zone);
        expect(countBuckets(from, to, interval, zone)).to.equal(reference.length);
        expect(bucketStarts(from, to, interval, zone)).to.deep.equal(reference);
      }),
      { numRuns: 2000 },
    );
  });

  it("counts the DST days of Brussels exactly: 23 and 25 Hourly, 92 and 100 quarter-hours, one Daily bucket each", () => {
    const spring = { from: ms("2024-03-30T23:00:00Z"), to: ms("2024-03-31T22:00:00Z") };
    const autumn = { from: ms("2024-10-26T22:00:00Z"), to: ms("2024-10-27T23:00:00Z") };
    const count = (r: { from: number; to: number }, interval: Interval) => countBuckets(r.from, r.to, interval, "Europe/Brussels");
    expect([count(spring, "Hourly"), count(spring, "15 minute"), count(spring, "Daily")]).to.deep.equal([23, 92, 1]);
    expect([count(autumn, "Hourly"), count(autumn, "15 minute"), count(autumn, "Daily")]).to.deep.equal([25, 100, 1]);
  });

  it("counts Monthly buckets over the years 0001–9999 without enumerating them, and refuses the range with the cap's 400", () => {
    // From 0001-01-01 00:17:30 local (Brussels mean time) to 9999-01-01 01:00 local: January 1 … January 9999.
    const from = ms("0001-01-01T00:00:00Z");
    const to = ms("9999-01-01T00:00:00Z");
    expect(countBuckets(from, to, "Monthly", "Europe/Brussels")).to.equal(9998 * 12 + 1);
    let refused: unknown;
    try {
      bucketStarts(from, to, "Monthly", "Europe/Brussels");
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(ProblemError);
    const problem = (refused as ProblemError).toProblem();
    expect(problem).to.deep.include({ status: 400, code: "INVALID_REQUEST", detail: `the range holds more than ${MAX_BUCKETS} Monthly buckets; choose a longer interval or a shorter range` });
    // The exact count, which an enumeration stopping at the cap could never know.
    expect(problem.errors).to.deep.equal([{ path: "queryOptions.aggregation.interval", message: problem.detail, buckets: 119_977 }]);
  });

  it("counts 5-minute and Hourly buckets over centuries by division alone", () => {
    // Brussels kept UTC from 1892 to 1914 and CET in winter since 1946: both ends fall on the grid.
    const from = ms("1900-01-01T00:00:00Z");
    const to = ms("2100-01-01T00:00:00Z");
    const days = (to - from) / DAY;
    expect(days).to.equal(73_049);
    expect(countBuckets(from, to, "5 minute", "Europe/Brussels")).to.equal(days * 288);
    expect(countBuckets(from, to, "Hourly", "Europe/Brussels")).to.equal(days * 24);
    expect(() => checkBucketCount(from, to, "Hourly", "Europe/Brussels")).to.throw(ProblemError, "the range holds more than 100000 Hourly buckets");
    expect(countBuckets(ms("0001-01-01T00:00:00Z"), ms("9999-12-31T00:00:00Z"), "5 minute", "UTC")).to.equal(((ms("9999-12-31T00:00:00Z") - ms("0001-01-01T00:00:00Z")) / 300_000));
  });

  it("allows exactly the cap, and counts an empty range as no buckets", () => {
    const from = ms("2024-01-01T00:00:00Z");
    expect(bucketStarts(from, from + MAX_BUCKETS * 300_000, "5 minute", "UTC")).to.have.length(MAX_BUCKETS);
    expect(() => bucketStarts(from, from + MAX_BUCKETS * 300_000 + 1, "5 minute", "UTC")).to.throw(ProblemError, `more than ${MAX_BUCKETS} 5 minute buckets`);
    expect(countBuckets(from, from, "Daily", "UTC")).to.equal(0);
  });
});
