import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { TimeSeries } from "../../src/timeseries/service.js";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

/** shared/SEMANTICS.md, "Edges, fixed": the readings tests hold, on both backends. */
describeEachBackend("time-series edges, fixed", (ctx) => {
  let series: TimeSeries;
  before(() => {
    series = new TimeSeries(ctx.db.knex, "UTC", () => new Date("2024-06-01T00:00:00Z"));
  });

  it("orders ties between items pooled by SINGLEAGGREGATION by itemId: open the first, close the last, diff from the last before", async () => {
    const stored = await upsertEntities(ctx.db.knex, ctx.tenant, [
      ...Array.from({ length: 6 }, (_, i) => ({ type: "Item", key: `m${i}` })),
      { type: "IndexSet", key: "POOL" },
    ]);
    const items = stored.slice(0, 6).map((e) => e.id);
    const indexSet = stored[6]!.id;
    await createLinks(ctx.db.knex, ctx.tenant, items.map((id) => ({ from: { id }, relation: "inIndexSet", to: { id: indexSet } })));
    const byId = [...items].sort();
    // Each hour, every item has an event at the hour's first and last instant (no sourceId), values
    // distinct, written in an order unrelated to the ids; one more tie before the range for diff.
    const hours = 24;
    const value = (hour: number, item: string, edge: number) => hour * 1000 + items.indexOf(item) * 10 + edge;
    const at = (hour: number, edge: number) => new Date(Date.UTC(2024, 0, 1, hour, edge === 0 ? 0 : 59, edge === 0 ? 0 : 59, edge === 0 ? 0 : 999)).toISOString();
    const events = [];
    for (let hour = 0; hour < hours; hour++) {
      const order = [...items].sort(() => (hour % 2 === 0 ? 1 : -1)).reverse();
      for (const item of order) for (const edge of [0, 1]) events.push({ itemId: item, timestamp: at(hour, edge), value: value(hour, item, edge) });
    }
    for (const item of items) events.push({ itemId: item, timestamp: "2023-12-31T23:00:00Z", value: -items.indexOf(item) });
    await ingestEvents(ctx.db.knex, ctx.tenant, events);

    const range = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" } as const;
    const pooled = async (metric: string) => {
      const answers = new Set<string>();
      let values: (number | null)[] = [];
      for (let run = 0; run < 5; run++) {
        const answer = await series.timelineQuery(ctx.tenant, { queryType: "SINGLEAGGREGATION", eventDateRange: range, queryOptions: { aggregation: { metric, interval: "Hourly" }, indexSet } as never });
        values = (answer as { buckets: { value: number | null }[] }).buckets.map((b) => b.value);
        answers.add(JSON.stringify(values));
      }
      expect(answers.size, `${metric}: the same request answered differently`).to.equal(1);
      return values;
    };
    const hoursList = Array.from({ length: hours }, (_, h) => h);
    const first = byId[0]!;
    const last = byId[byId.length - 1]!;
    expect(await pooled("open")).to.deep.equal(hoursList.map((h) => value(h, first, 0)));
    expect(await pooled("close")).to.deep.equal(hoursList.map((h) => value(h, last, 1)));
    const closes = hoursList.map((h) => value(h, last, 1));
    expect(await pooled("diff")).to.deep.equal(hoursList.map((h) => closes[h]! - (h === 0 ? -items.indexOf(last) : closes[h - 1]!)));
  });

  it("starts a Havana day whose midnight the clocks pass twice at the first midnight, never labelled at or after `to`", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "havana" }]);
    const id = item!.id;
    await ingestEvents(ctx.db.knex, ctx.tenant, [
      { itemId: id, timestamp: "2024-11-02T12:00:00Z", value: 1 },
      // 00:30 CDT on 2024-11-03, before the clocks go back from 01:00 CDT to 00:00 CST (05:00Z).
      { itemId: id, timestamp: "2024-11-03T04:30:00Z", value: 10 },
      { itemId: id, timestamp: "2024-11-03T05:30:00Z", value: 100 },
    ]);
    const buckets = async (to: string) => {
      const eventDateRange = { period: "Custom range", from: "2024-11-02T04:00:00Z", to, timeZone: "America/Havana" } as never;
      const answer = (await series.series(ctx.tenant, [id], { eventDateRange, queryOptions: { aggregation: { metric: "sum", interval: "Daily" } } as never })).get(id);
      return (answer as { buckets: { timestamp: string; value: number | null }[] }).buckets;
    };
    // Up to the second midnight: the day's bucket holds the hour before it, labelled at the first.
    expect(await buckets("2024-11-03T05:00:00Z")).to.deep.equal([
      { timestamp: "2024-11-02T04:00:00.000Z", value: 1 },
      { timestamp: "2024-11-03T04:00:00.000Z", value: 10 },
    ]);
    expect(await buckets("2024-11-04T05:00:00Z")).to.deep.equal([
      { timestamp: "2024-11-02T04:00:00.000Z", value: 1 },
      { timestamp: "2024-11-03T04:00:00.000Z", value: 110 },
    ]);
  });
});

describeEachBackend("ingested instants finer than a millisecond", (ctx) => {
  const suite = adminServer(ctx);

  it("refuses digits past the millisecond that are not zeros, naming the field; takes them when they are zeros; never cuts", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "fine", attributes: { itemAction: "INGEST" } }]);
    const post = (events: unknown[]) =>
      suite.server.app.inject({ method: "POST", url: `/items/${item!.id}/events`, headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant }, payload: { events } });
    for (const [event, path] of [
      [{ timestamp: "2024-01-01T00:00:00.123456Z", value: 1 }, "events[0].timestamp"],
      [{ timestamp: "2024-01-01T00:00:00.1230001Z", value: 1 }, "events[0].timestamp"],
      [{ timestamp: "2024-01-01T01:00:00.0001+01:00", value: 1 }, "events[0].timestamp"],
      [{ timestamp: "2024-01-01T00:00:00,123400Z", value: 1 }, "events[0].timestamp"],
      [{ timestamp: "2024-01-01T00:00:00Z", value: 1, entry: "2024-01-01T00:00:00.000001Z" }, "events[0].entry"],
    ] as const) {
      const res = await post([event]);
      expect(res.statusCode, `${JSON.stringify(event)}: ${res.body}`).to.equal(400);
      const body = res.json() as { code: string; errors: { path: string; message: string }[] };
      expect(body.code).to.equal("INVALID_REQUEST");
      expect(body.errors.map((e) => e.path)).to.deep.equal([path]);
      expect(body.errors[0]!.message).to.match(/finer than a millisecond/);
    }
    const res = await post([
      { timestamp: "2024-01-01T00:00:00.123000Z", value: 1 },
      { timestamp: "2024-01-01T00:00:01.5000000Z", value: 2, entry: "2024-01-01T00:00:00.000000Z" },
    ]);
    expect(res.statusCode, res.body).to.equal(200);
    const stored = await suite.server.app.inject({
      method: "POST",
      url: `/items/${item!.id}/events/query`,
      headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant },
      payload: { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z" } },
    });
    expect(stored.json()).to.deep.equal({
      events: [
        { timestamp: "2024-01-01T00:00:00.123Z", value: 1 },
        { timestamp: "2024-01-01T00:00:01.500Z", value: 2, entry: "2024-01-01T00:00:00.000Z" },
      ],
    });
  });
});
