import { expect } from "chai";
import fc from "fast-check";
import { parseRetryBackoff } from "../../src/tasks/retry-backoff.js";

describe("retryBackoff task header (ISO-8601 duration)", () => {
  it("reads the durations connectors' templates write, in milliseconds", () => {
    const cases: [string, number][] = [
      ["PT3S", 3000],
      ["PT0S", 0],
      ["PT0.5S", 500],
      ["PT1M30S", 90_000],
      ["PT2H", 7_200_000],
      ["P1DT2H", 93_600_000],
      ["P2W", 1_209_600_000],
      [" PT10S ", 10_000],
    ];
    for (const [value, ms] of cases) expect(parseRetryBackoff(value), value).to.deep.equal({ kind: "fixed", ms });
  });

  it("leaves an absent or blank header to the worker's default back-off", () => {
    for (const value of [undefined, null, "", "  "]) expect(parseRetryBackoff(value)).to.deep.equal({ kind: "default" });
  });

  it("refuses what is not a fixed, non-negative duration, saying why", () => {
    const reasons: [unknown, RegExp][] = [
      ["3 seconds", /not an ISO-8601 duration/],
      ["pt3s", /not an ISO-8601 duration/],
      ["3000", /not an ISO-8601 duration/],
      ["PT", /names no amount of time/],
      ["P", /names no amount of time/],
      ["P1M", /years or months/],
      ["P1Y", /years or months/],
      ["-PT3S", /negative/],
      ["PT-3S", /negative/],
      [3000, /must be text/],
    ];
    for (const [value, reason] of reasons) {
      const read = parseRetryBackoff(value);
      expect(read.kind, String(value)).to.equal("invalid");
      expect(read.kind === "invalid" ? read.reason : "", String(value)).to.match(reason);
    }
  });

  it("quotes at most 100 characters of a refused value (it goes into a log line)", () => {
    const read = parseRetryBackoff("x".repeat(1000));
    expect(read.kind === "invalid" ? read.value : "").to.equal("x".repeat(100));
  });

  it("any whole number of days, hours, minutes and seconds is their sum in milliseconds", () => {
    fc.assert(
      fc.property(fc.nat(400), fc.nat(48), fc.nat(120), fc.nat(3600), (d, h, m, s) => {
        expect(parseRetryBackoff(`P${d}DT${h}H${m}M${s}S`)).to.deep.equal({ kind: "fixed", ms: (((d * 24 + h) * 60 + m) * 60 + s) * 1000 });
      }),
    );
  });
});
