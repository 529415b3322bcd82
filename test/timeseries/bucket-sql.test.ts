import { expect } from "chai";
import fc from "fast-check";
import { bucketStarts } from "../../src/timeseries/bucket-range.js";
import { bucketStart, nextBucketStart, type Interval } from "../../src/timeseries/buckets.js";
import { describeEachBackend } from "../support/backends.js";

const iso = (t: number) => new Date(t).toISOString();
const ms = (text: string) => Date.parse(text);
const UNITS: Partial<Record<Interval, string>> = { Daily: "day", Weekly: "week", Monthly: "month", Quarterly: "quarter", Yearly: "year" };

describeEachBackend("calendar bucket starts and PostgreSQL's date_trunc", (ctx) => {
  /** `date_trunc(unit, t, zone)` of each instant, as epoch milliseconds. */
  const dateTrunc = async (unit: string, zone: string, instants: number[]): Promise<number[]> => {
    const result = (await ctx.db.knex.raw("select extract(epoch from date_trunc(?, t, ?)) * 1000 as start from unnest(?::timestamptz[]) with ordinality as u(t, n) order by n", [
      unit,
      zone,
      instants.map(iso),
    ])) as { rows: { start: string | number }[] };
    return result.rows.map((r) => Number(r.start));
  };

  it("puts every instant in the bucket PostgreSQL groups it in, also where midnight is skipped or passed twice, labelled by its first instant", async () => {
    // Havana and Beirut change their clocks at midnight; Santiago at midnight too; Brussels did in 1916.
    const zones = ["Europe/Brussels", "America/Havana", "Asia/Beirut", "America/Santiago", "America/New_York", "Asia/Kolkata"];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...zones),
        fc.constantFrom<Interval>("Daily", "Weekly", "Monthly", "Quarterly", "Yearly"),
        fc.array(fc.integer({ min: ms("2012-01-01T00:00:00Z"), max: ms("2022-01-01T00:00:00Z") }), { minLength: 1, maxLength: 50 }),
        async (zone, interval, instants) => {
          // Instants near each one's local midnight make the clock changes at midnight likely.
          const nearMidnight = instants.map((t) => bucketStart(t, "Daily", zone) + ((t % 7_200_000) - 3_600_000));
          const all = [...instants, ...nearMidnight];
          const truncated = await dateTrunc(UNITS[interval]!, zone, all);
          // The same group: date_trunc's label lies in the bucket; where it takes a repeated midnight's
          // second passing, the bucket starts at the first (shared/SEMANTICS.md), at most an hour before.
          expect(all.map((t) => iso(bucketStart(t, interval, zone)))).to.deep.equal(truncated.map((t) => iso(bucketStart(t, interval, zone))));
          all.forEach((t, i) => {
            const start = bucketStart(t, interval, zone);
            expect(start).to.be.at.most(t);
            expect(truncated[i]! - start).to.be.oneOf([0, 3_600_000]);
          });
        },
      ),
      { numRuns: 60 },
    );
  });

  it("starts each Havana day at the first instant of its date across the clock changes at midnight", async () => {
    const zone = "America/Havana";
    const spring = bucketStarts(ms("2024-03-09T12:00:00Z"), ms("2024-03-12T12:00:00Z"), "Daily", zone);
    // 2024-03-10 00:00 does not exist: the day starts at the change (01:00 CDT); the next days at midnight again.
    expect(spring.map(iso)).to.deep.equal(["2024-03-09T05:00:00.000Z", "2024-03-10T05:00:00.000Z", "2024-03-11T04:00:00.000Z", "2024-03-12T04:00:00.000Z"]);
    expect(spring).to.deep.equal(await dateTrunc("day", zone, spring.map((t) => t + 3_600_000)));
    // 2024-11-03 00:00 happens twice (01:00 CDT goes back to 00:00 CST): the day starts at the first
    // (04:00Z); PostgreSQL's date_trunc labels it with the second (05:00Z), in the same group.
    const autumn = bucketStarts(ms("2024-11-02T12:00:00Z"), ms("2024-11-04T12:00:00Z"), "Daily", zone);
    expect(autumn.map(iso)).to.deep.equal(["2024-11-02T04:00:00.000Z", "2024-11-03T04:00:00.000Z", "2024-11-04T05:00:00.000Z"]);
    expect(nextBucketStart(autumn[0]!, "Daily", zone)).to.equal(autumn[1]);
    expect(bucketStart(ms("2024-11-03T04:30:00Z"), "Daily", zone)).to.equal(ms("2024-11-03T04:00:00Z"));
    expect(bucketStart(ms("2024-11-03T03:59:59.999Z"), "Daily", zone)).to.equal(ms("2024-11-02T04:00:00Z"));
    expect((await dateTrunc("day", zone, [ms("2024-11-03T04:30:00Z")])).map(iso)).to.deep.equal(["2024-11-03T05:00:00.000Z"]);
    // A range ending at the second midnight: its last bucket is labelled before it.
    expect(bucketStarts(ms("2024-11-02T04:00:00Z"), ms("2024-11-03T05:00:00Z"), "Daily", zone).map(iso)).to.deep.equal(["2024-11-02T04:00:00.000Z", "2024-11-03T04:00:00.000Z"]);
  });

  it("keeps Brussels months at midnight after the midnight that 1916 skipped", async () => {
    const starts = bucketStarts(ms("1916-03-15T00:00:00Z"), ms("1916-07-15T00:00:00Z"), "Monthly", "Europe/Brussels");
    expect(starts.map(iso)).to.deep.equal(["1916-02-29T23:00:00.000Z", "1916-03-31T23:00:00.000Z", "1916-04-30T23:00:00.000Z", "1916-05-31T22:00:00.000Z", "1916-06-30T22:00:00.000Z"]);
    expect(starts).to.deep.equal(await dateTrunc("month", "Europe/Brussels", starts.map((t) => t + 86_400_000)));
  });
});
