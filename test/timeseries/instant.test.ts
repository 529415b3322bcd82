import { expect } from "chai";
import fc from "fast-check";
import { DateTime } from "luxon";
import { instant } from "../../src/timeseries/events.js";

describe("reading event timestamps", () => {
  it("reads back every instant written as ISO-8601", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("1900-01-01T00:00:00Z"), max: new Date("2200-01-01T00:00:00Z"), noInvalidDate: true }), (d) => {
        expect(instant(d.toISOString())?.getTime()).to.equal(d.getTime());
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with luxon on the common form, offsets, missing seconds and impossible dates included", () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
    const text = fc
      .tuple(fc.integer({ min: 1970, max: 2100 }), two(13), two(32), two(23), two(59), fc.option(two(59)), fc.option(fc.integer({ min: 0, max: 999999 })), fc.constantFrom("", "Z", "+02:00", "-05:30", "+0100", "-11"))
      .map(([y, mo, d, h, mi, s, frac, zone]) => `${y}-${mo}-${d}T${h}:${mi}${s === null ? "" : `:${s}${frac === null ? "" : `.${frac}`}`}${zone}`);
    fc.assert(
      fc.property(text, (t) => {
        const luxon = DateTime.fromISO(t, { zone: "utc", setZone: true });
        expect(instant(t)?.getTime(), t).to.equal(luxon.isValid ? luxon.toMillis() : undefined);
      }),
      { numRuns: 3000 },
    );
  });

  it("refuses what is not a date-time", () => {
    for (const bad of ["", "yesterday", "2024-13-01T00:00:00Z", "2024-01-01T25:00:00Z", "2024-01-01T00:00:00+19:00", "1704067200000"]) expect(instant(bad), bad).to.equal(undefined);
    expect(instant(1704067200000)).to.equal(undefined);
  });
});
