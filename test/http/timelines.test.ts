import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

const JANUARY = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-03T00:00:00Z", timeZone: "UTC" };

describeEachBackend("timelines in transforms", (ctx) => {
  let server: TestServer;
  let token: string;
  let meters: string[];
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());
  beforeEach(async () => {
    const stored = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Agreement", key: "A" },
      { type: "Item", key: "m1", attributes: { itemAction: "INGEST" } },
      { type: "Item", key: "m2", attributes: { itemAction: "INGEST" } },
    ]);
    meters = [stored[1]!.id, stored[2]!.id];
    await createLinks(ctx.db.knex, ctx.tenant, meters.map((id) => ({ from: { type: "Agreement", key: "A" }, relation: "hasMeter", to: { id } })));
    await ingestEvents(ctx.db.knex, ctx.tenant, [
      { itemId: meters[0], timestamp: "2024-01-01T06:00:00Z", value: 1 },
      { itemId: meters[0], timestamp: "2024-01-01T18:00:00Z", value: 2 },
      { itemId: meters[0], timestamp: "2024-01-02T06:00:00Z", value: 4 },
      { itemId: meters[1], timestamp: "2024-01-02T06:00:00Z", value: 10 },
    ]);
  });

  const call = (method: "POST", url: string, payload: unknown) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });

  it("replaces name: id in result() by each item's aggregated events, fetched in one query for all items", async () => {
    const created = await call("POST", "/api-definitions", {
      externalId: "meters",
      data: { timelineParameters: [{ name: "consumption", eventDateRange: JANUARY, queryOptions: { aggregation: { metric: "sum", interval: "Daily" } } }] },
      query: 'Agreement ?a; entity:key "A"; link:hasMeter Item:?meter.',
      transform: '{ "meters": result(?meter) { key, consumption: id } }',
    });
    expect(created.statusCode, created.body).to.equal(201);

    let eventQueries = 0;
    const count = (q: { sql: string }) => {
      if (/from "events"|from events/i.test(q.sql)) eventQueries++;
    };
    ctx.db.knex.on("query", count);
    const res = await call("POST", "/task-backend/tasks/energy/api/request", { apiDefinitionExternalId: "meters" });
    ctx.db.knex.off("query", count);

    expect(res.statusCode, res.body).to.equal(200);
    expect(res.json()).to.deep.equal({
      meters: [
        { key: "m1", consumption: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 3 }, { timestamp: "2024-01-02T00:00:00.000Z", value: 4 }] },
        { key: "m2", consumption: [{ timestamp: "2024-01-01T00:00:00.000Z", value: null }, { timestamp: "2024-01-02T00:00:00.000Z", value: 10 }] },
      ],
    });
    expect(eventQueries).to.equal(1);
  });

  it("binds $events(itemId, options) to the series query", async () => {
    await call("POST", "/api-definitions", {
      externalId: "first-meter",
      query: 'Agreement ?a; entity:key "A"; link:hasMeter Item:?meter.',
      transform: `$events(meter[key = "m1"].id, { "eventDateRange": ${JSON.stringify(JANUARY)}, "queryOptions": { "aggregation": { "metric": "max", "interval": "Daily" } } })`,
    });
    const res = await call("POST", "/task-backend/tasks/energy/api/request", { apiDefinitionExternalId: "first-meter" });
    expect(res.json()).to.deep.equal([
      { timestamp: "2024-01-01T00:00:00.000Z", value: 2 },
      { timestamp: "2024-01-02T00:00:00.000Z", value: 4 },
    ]);
  });

  it("refuses a timeline parameter with a bad date range or query options on save", async () => {
    const res = await call("POST", "/api-definitions", {
      externalId: "bad-timeline",
      data: { timelineParameters: [{ name: "t", eventDateRange: { period: "Fortnight" }, queryOptions: { aggregation: { metric: "median", interval: "Daily" } } }] },
      query: "Item ?i.",
    });
    expect(res.statusCode).to.equal(400);
    expect((res.json() as { errors: { path: string }[] }).errors.map((e) => e.path)).to.deep.equal([
      "data.timelineParameters[0].eventDateRange.period",
      "data.timelineParameters[0].queryOptions.aggregation.metric",
    ]);
  });
});
