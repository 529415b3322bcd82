import { expect } from "chai";
import { bucketStarts } from "../../src/timeseries/bucket-range.js";
import { bucketStart, INTERVALS, type Interval } from "../../src/timeseries/buckets.js";

const BRUSSELS = "Europe/Brussels";
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const starts = (from: string, to: string, interval: Interval, zone = BRUSSELS) => bucketStarts(ms(from), ms(to), interval, zone).map(iso);

describe("calendar buckets", () => {
  it("gives 23 Hourly buckets and one 23-hour Daily bucket on the spring-forward day in Brussels", () => {
    const hourly = starts("2024-03-30T23:00:00Z", "2024-03-31T22:00:00Z", "Hourly");
    expect(hourly).to.have.length(23);
    expect(hourly.slice(0, 3)).to.deep.equal(["2024-03-30T23:00:00.000Z", "2024-03-31T00:00:00.000Z", "2024-03-31T01:00:00.000Z"]);
    expect(starts("2024-03-30T12:00:00Z", "2024-04-01T12:00:00Z", "Daily")).to.deep.equal([
      "2024-03-29T23:00:00.000Z",
      "2024-03-30T23:00:00.000Z",
      "2024-03-31T22:00:00.000Z",
    ]);
  });

  it("gives 25 Hourly buckets and one 25-hour Daily bucket on the fall-back day, 02:00 local twice", () => {
    const hourly = starts("2024-10-26T22:00:00Z", "2024-10-27T23:00:00Z", "Hourly");
    expect(hourly).to.have.length(25);
    expect(hourly.slice(0, 4)).to.deep.equal([
      "2024-10-26T22:00:00.000Z",
      "2024-10-26T23:00:00.000Z",
      "2024-10-27T00:00:00.000Z", // 02:00 CEST
      "2024-10-27T01:00:00.000Z", // 02:00 CET
    ]);
    expect(starts("2024-10-27T00:30:00Z", "2024-10-28T00:00:00Z", "Daily")).to.deep.equal(["2024-10-26T22:00:00.000Z", "2024-10-27T23:00:00.000Z"]);
    expect(starts("2024-10-26T22:00:00Z", "2024-10-27T23:00:00Z", "15 minute")).to.have.length(100);
  });

  it("aligns minute buckets to the local wall clock, also in a half-hour zone", () => {
    expect(iso(bucketStart(ms("2024-01-01T00:07:00Z"), "15 minute", "Asia/Kolkata"))).to.equal("2024-01-01T00:00:00.000Z"); // 05:37 → 05:30 local
    expect(iso(bucketStart(ms("2024-01-01T00:07:00Z"), "Hourly", "Asia/Kolkata"))).to.equal("2023-12-31T23:30:00.000Z"); // 05:37 → 05:00 local
    expect(iso(bucketStart(ms("2024-01-01T10:59:59.999Z"), "20 minute", BRUSSELS))).to.equal("2024-01-01T10:40:00.000Z");
    for (const [interval, expected] of [
      ["5 minute", "2024-06-01T10:55:00.000Z"],
      ["10 minute", "2024-06-01T10:50:00.000Z"],
      ["30 minute", "2024-06-01T10:30:00.000Z"],
    ] as const) {
      expect(iso(bucketStart(ms("2024-06-01T10:58:30Z"), interval, BRUSSELS))).to.equal(expected);
    }
  });

  it("starts weeks on Monday, months, quarters and years at local midnight of their first day", () => {
    const t = ms("2024-05-15T12:00:00Z"); // Wednesday
    expect(iso(bucketStart(t, "Weekly", BRUSSELS))).to.equal("2024-05-12T22:00:00.000Z");
    expect(iso(bucketStart(t, "Monthly", BRUSSELS))).to.equal("2024-04-30T22:00:00.000Z");
    expect(iso(bucketStart(t, "Quarterly", BRUSSELS))).to.equal("2024-03-31T22:00:00.000Z");
    expect(iso(bucketStart(t, "Yearly", BRUSSELS))).to.equal("2023-12-31T23:00:00.000Z");
    expect(starts("2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", "Quarterly")).to.deep.equal([
      "2023-12-31T23:00:00.000Z",
      "2024-03-31T22:00:00.000Z",
      "2024-06-30T22:00:00.000Z",
      "2024-09-30T22:00:00.000Z",
      "2024-12-31T23:00:00.000Z",
    ]);
  });

  it("counts the days of a leap year and of February in one", () => {
    expect(starts("2023-12-31T23:00:00Z", "2024-12-31T23:00:00Z", "Daily")).to.have.length(366);
    expect(starts("2024-01-31T23:00:00Z", "2024-02-29T23:00:00Z", "Daily")).to.have.length(29);
    expect(starts("2024-01-31T23:00:00Z", "2024-02-29T23:00:00Z", "Monthly")).to.deep.equal(["2024-01-31T23:00:00.000Z"]);
  });

  it("emits every bucket of the range in order, empty or not, for all eleven intervals", () => {
    for (const interval of INTERVALS) {
      const list = bucketStarts(ms("2024-01-01T00:00:00Z"), ms("2024-01-02T00:00:00Z"), interval, BRUSSELS);
      expect(list.length, interval).to.be.at.least(1);
      for (let i = 1; i < list.length; i++) expect(list[i]! > list[i - 1]!).to.equal(true);
      expect(bucketStart(list[0]!, interval, BRUSSELS)).to.equal(list[0]);
    }
  });
});
