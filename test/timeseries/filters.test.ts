import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { bucketStart, fixedLengthMs, INTERVALS } from "../../src/timeseries/buckets.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { TimeSeries } from "../../src/timeseries/service.js";
import { describeEachBackend } from "../support/backends.js";

const RANGE = { period: "Custom range" as const, from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };
const at = (hour: number) => `2024-01-01T${String(hour).padStart(2, "0")}:00:00Z`;

describeEachBackend("time-series filters and timelines", (ctx) => {
  let series: TimeSeries;
  let a: string;
  let b: string;
  let indexSet: string;

  beforeEach(async () => {
    series = new TimeSeries(ctx.db.knex, "Europe/Brussels", () => new Date("2024-01-01T12:00:00Z"));
    const stored = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Item", key: "a" },
      { type: "Item", key: "b" },
      { type: "Item", key: "c" },
      { type: "IndexSet", key: "METERS" },
    ]);
    [a, b] = [stored[0]!.id, stored[1]!.id];
    indexSet = stored[3]!.id;
    await createLinks(ctx.db.knex, ctx.tenant, [
      { from: { id: a }, relation: "inIndexSet", to: { id: indexSet } },
      { from: { id: b }, relation: "inIndexSet", to: { id: indexSet } },
    ]);
    await ingestEvents(ctx.db.knex, ctx.tenant, [
      { itemId: a, timestamp: at(0), value: 1, sourceId: "s1", tags: ["red", "big"], keyValues: { site: "gent" }, tenantCodes: { region: "north" }, entityReferences: [{ type: "Person", id: "p1", role: "OWNER" }], entry: "2024-01-01T00:00:00Z" },
      { itemId: a, timestamp: at(1), value: 2, sourceId: "s2", tags: ["red"], keyValues: { site: "brugge" }, tenantCodes: { region: "south" }, entityReferences: [{ type: "Person", id: "p2", role: "USER" }], entry: "2024-01-01T05:00:00Z" },
      { itemId: a, timestamp: at(2), value: 3, sourceId: "s1", tags: ["big"], entityReferences: [{ type: "Person", id: "p1", role: "USER" }, { type: "Person", id: "p2", role: "OWNER" }] },
      { itemId: a, timestamp: at(3), value: 4 },
      { itemId: b, timestamp: at(0), value: 10, sourceId: "s1", tags: ["red"] },
      { itemId: b, timestamp: at(1), value: 20 },
    ]);
  });

  const values = async (filter: unknown, itemIds = [a]) => {
    const answer = await series.series(ctx.tenant, itemIds, { eventDateRange: RANGE, queryOptions: { filter } as never });
    return itemIds.flatMap((id) => (answer.get(id) as { events: { value: number }[] }).events.map((e) => e.value));
  };

  it("filters by tags with or, and, not", async () => {
    expect(await values({ tags: { values: ["red", "big"] } })).to.deep.equal([1, 2, 3]);
    expect(await values({ tags: { operator: "and", values: ["red", "big"] } })).to.deep.equal([1]);
    expect(await values({ tags: { operator: "not", values: ["red"] } })).to.deep.equal([3, 4]);
  });

  it("filters by keyValues and tenantCodes with or, and, not", async () => {
    expect(await values({ keyValues: [{ key: "site", values: ["gent", "antwerpen"] }] })).to.deep.equal([1]);
    expect(await values({ keyValues: [{ key: "site", operator: "not", values: ["gent"] }] })).to.deep.equal([2, 3, 4]);
    expect(await values({ tenantCodes: [{ key: "region", operator: "and", values: ["south"] }] })).to.deep.equal([2]);
    expect(await values({ tenantCodes: [{ key: "region", operator: "and", values: ["south", "north"] }] })).to.deep.equal([]);
  });

  it("filters by entity references, with roles, and, not", async () => {
    expect(await values({ entityReferences: [{ type: "Person", ids: ["p1"] }] })).to.deep.equal([1, 3]);
    expect(await values({ entityReferences: [{ type: "Person", ids: ["p1"], roles: ["OWNER"] }] })).to.deep.equal([1]);
    expect(await values({ entityReferences: [{ type: "Person", ids: ["p1", "p2"], operator: "and" }] })).to.deep.equal([3]);
    expect(await values({ entityReferences: [{ type: "Person", ids: ["p1"], operator: "not" }] })).to.deep.equal([2, 4]);
    expect(await values({ entityReferences: [{ type: "Company", ids: ["p1"] }] })).to.deep.equal([]);
  });

  it("filters by number ranges, inclusive or not, inverted", async () => {
    expect(await values({ numberValues: [{ from: 2, to: 4 }] })).to.deep.equal([2, 3]);
    expect(await values({ numberValues: [{ from: 2, fromInclusive: false, to: 4, toInclusive: true }] })).to.deep.equal([3, 4]);
    expect(await values({ numberValues: [{ to: 2, invert: true }] })).to.deep.equal([2, 3, 4]);
    expect(await values({ numberValues: [{ from: 2 }, { to: 4 }] })).to.deep.equal([2, 3]);
  });

  it("filters by meta dates, inverted too, events without the date only passing inverted", async () => {
    expect(await values({ metaDates: [{ type: "entry", from: "2024-01-01T00:00:00Z", to: "2024-01-01T05:00:00Z" }] })).to.deep.equal([1]);
    expect(await values({ metaDates: [{ type: "entry", from: "2024-01-01T00:00:00Z", to: "2024-01-01T05:00:00Z", toInclusive: true }] })).to.deep.equal([1, 2]);
    expect(await values({ metaDates: [{ type: "entry", from: "2024-01-01T00:00:00Z", fromInclusive: false }] })).to.deep.equal([2]);
    expect(await values({ metaDates: [{ type: "entry", to: "2024-01-01T01:00:00Z", invert: true }] })).to.deep.equal([2, 3, 4]);
  });

  it("filters by source ids and item ids, and ANDs the members", async () => {
    expect(await values({ sourceIds: ["s1"] })).to.deep.equal([1, 3]);
    expect(await values({ sourceIds: ["s1"], tags: { values: ["red"] } })).to.deep.equal([1]);
    expect(await values({ itemIds: [b] }, [a, b])).to.deep.equal([10, 20]);
  });

  it("refuses a filter of the wrong shape, naming the place", async () => {
    for (const [filter, path] of [
      [{ tags: { operator: "xor", values: ["a"] } }, "queryOptions.filter.tags.operator"],
      [{ numberValues: [{}] }, "queryOptions.filter.numberValues[0]"],
      [{ metaDates: [{ type: "birth", from: "2024-01-01T00:00:00Z" }] }, "queryOptions.filter.metaDates[0].type"],
      [{ colour: ["red"] }, "queryOptions.filter.colour"],
      [{ itemIds: ["not-a-uuid"] }, "queryOptions.filter.itemIds[0]"],
    ] as const) {
      try {
        await values(filter);
        expect.fail(`accepted ${JSON.stringify(filter)}`);
      } catch (err) {
        expect((err as { errors?: { path: string }[] }).errors?.[0]?.path).to.equal(path);
      }
    }
  });

  it("answers one series per item, and one timeline over an index set narrowed by items", async () => {
    const aggregation = { metric: "sum", interval: "Daily" };
    const each = await series.timelineQuery(ctx.tenant, { itemIds: [a, b], eventDateRange: RANGE, queryOptions: { aggregation } as never });
    expect(each).to.deep.equal({
      series: [
        { itemId: a, buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 10 }] },
        { itemId: b, buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 30 }] },
      ],
    });
    const single = await series.timelineQuery(ctx.tenant, { queryType: "SINGLEAGGREGATION", eventDateRange: RANGE, queryOptions: { aggregation, indexSet } as never });
    expect(single).to.deep.equal({ buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 40 }] });
    const narrowed = await series.timelineQuery(ctx.tenant, { queryType: "SINGLEAGGREGATION", itemIds: [b], eventDateRange: RANGE, queryOptions: { aggregation, indexSet } as never });
    expect(narrowed).to.deep.equal({ buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 30 }] });
    const filtered = await series.timelineQuery(ctx.tenant, {
      queryType: "SINGLEAGGREGATION",
      eventDateRange: RANGE,
      queryOptions: { aggregation: { metric: "count", interval: "Daily" }, indexSet, filter: { tags: { values: ["red"] } } } as never,
    });
    expect(filtered).to.deep.equal({ buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 3 }] });
    try {
      await series.timelineQuery(ctx.tenant, { queryType: "SINGLEAGGREGATION", eventDateRange: RANGE, queryOptions: { aggregation } as never });
      expect.fail("accepted without indexSet");
    } catch (err) {
      expect((err as Error).message).to.equal("SINGLEAGGREGATION needs queryOptions.indexSet, the id of an IndexSet");
    }
  });

  it("resolves relative periods from the injected now", async () => {
    const answer = await series.series(ctx.tenant, [a], { eventDateRange: { period: "Today", timeZone: "UTC" } });
    expect((answer.get(a) as { events: unknown[] }).events).to.have.length(4);
    const yesterday = await series.series(ctx.tenant, [a], { eventDateRange: { period: "Yesterday", timeZone: "UTC" } });
    expect((yesterday.get(a) as { events: unknown[] }).events).to.have.length(0);
  });
});

describeEachBackend("SQL buckets against the calendar", (ctx) => {
  it("puts every event in the bucket the calendar says, for all eleven intervals, across both DST changes", async () => {
    const [stored] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "cal" }]);
    const item = stored!.id;
    // Events at an awkward stride over 2024 (a leap year), and dense ones over the two Brussels DST changes.
    const year = Array.from({ length: 600 }, (_, i) => Date.UTC(2023, 11, 31, 23) + i * 52_993_000).filter((t) => t < Date.UTC(2024, 11, 31, 23));
    const dense = (around: number) => Array.from({ length: 400 }, (_, i) => around - 86_400_000 + i * 433_000);
    const times = [...new Set([...year, ...dense(Date.UTC(2024, 2, 31, 1)), ...dense(Date.UTC(2024, 9, 27, 1))])].sort((x, y) => x - y);
    await ingestEvents(ctx.db.knex, ctx.tenant, times.map((t, i) => ({ itemId: item, timestamp: new Date(t).toISOString(), value: i })));
    const series = new TimeSeries(ctx.db.knex, "Europe/Brussels");
    const windows: [string, string][] = [
      ["2024-03-29T00:00:00Z", "2024-04-02T00:00:00Z"],
      ["2024-10-25T00:00:00Z", "2024-10-29T00:00:00Z"],
    ];
    for (const interval of INTERVALS) {
      const ranges = fixedLengthMs(interval) !== undefined ? windows : [["2023-12-31T23:00:00Z", "2024-12-31T23:00:00Z"] as [string, string]];
      for (const [from, to] of ranges) {
        const inRange = times.filter((t) => t >= Date.parse(from) && t < Date.parse(to));
        const answer = (await series.series(ctx.tenant, [item], { eventDateRange: { period: "Custom range", from, to }, queryOptions: { aggregation: { metric: "count", interval } } })).get(item) as {
          buckets: { timestamp: string; value: number }[];
        };
        const expected = new Map<number, number>();
        for (const t of inRange) {
          const b = bucketStart(t, interval, "Europe/Brussels");
          expected.set(b, (expected.get(b) ?? 0) + 1);
        }
        const got = new Map(answer.buckets.filter((b) => b.value > 0).map((b) => [Date.parse(b.timestamp), b.value]));
        expect(got, `${interval} ${from}`).to.deep.equal(expected);
        expect(answer.buckets.reduce((sum, b) => sum + b.value, 0), interval).to.equal(inRange.length);
      }
    }
  });
});
