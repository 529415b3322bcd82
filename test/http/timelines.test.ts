import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken, userToken } from "../support/tokens.js";
import { apiRequest } from "../../src/tasks/tasks.js";
import { taskOutcome } from "../../src/tasks/outcome.js";

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
      // The statement that answers the series: from the events, or from their rollups (cells, day
      // and month rows, day packs). The reconcile before it writes rollups and reads the events of
      // changed days only (not counted: inserts, and selects inside them).
      if (/^\s*select\b/i.test(q.sql) && /from "?(events|rollup_cells|rollup_periods|rollup_day_packs)\b/i.test(q.sql)) eventQueries++;
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

  it("answers $events() with a bad item id as the REST query does: 400 naming the argument, for a caller without any role, a test run and a task", async () => {
    await call("POST", "/api-definitions", {
      externalId: "events-of",
      data: { queryParameters: [{ name: "id", type: "string" }] },
      query: 'Agreement ?a; entity:key "A".',
      transform: "$events(${id}, {})",
    });
    const caller = await userToken("user-without-roles");
    const requested = await server.app.inject({
      method: "POST",
      url: "/task-backend/tasks/energy/api/request",
      payload: { apiDefinitionExternalId: "events-of", queryParameters: { id: "x" } },
      headers: { authorization: `Bearer ${caller}`, "x-tenant-id": ctx.tenant },
    });
    expect(requested.statusCode, requested.body).to.equal(400);
    expect(requested.json()).to.deep.include({ code: "INVALID_REQUEST", errors: [{ path: "$events.itemId", message: "$events(itemId, options): itemId must be the uuid of an Item" }] });
    // The REST call with the same id is a 400 naming the id too.
    expect((await call("POST", "/items/x/events/query", {})).statusCode).to.equal(400);

    const tested = await call("POST", "/api-definitions/test", { definition: { query: 'Agreement ?a; entity:key "A".', transform: '$events("x", {})' } });
    expect(tested.statusCode, tested.body).to.equal(400);
    expect((tested.json() as { errors: { path: string }[] }).errors.map((e) => e.path)).to.deep.equal(["$events.itemId"]);

    // The api-request task: a BPMN error the model can catch, not a retried failure.
    const thrown = await apiRequest(server.services, { apiDefinitionExternalId: "events-of", queryParameters: { id: "x" } }, { tenant: ctx.tenant }).then(
      () => expect.fail("the task should fail"),
      (err: unknown) => err,
    );
    expect(taskOutcome(thrown)).to.deep.equal({ kind: "bpmnError", code: "INVALID_REQUEST", message: "$events(itemId, options): itemId must be the uuid of an Item" });
  });

  it("names each bad $events() argument: a non-string id, options that are not an object, an unknown option, a bad range", async () => {
    const problems = async (transform: string) => {
      const res = await call("POST", "/api-definitions/test", { definition: { query: 'Agreement ?a; entity:key "A".', transform } });
      expect(res.statusCode, `${transform}: ${res.body}`).to.equal(400);
      return (res.json() as { errors: { path: string }[] }).errors.map((e) => e.path);
    };
    const id = JSON.stringify(meters[0]);
    expect(await problems("$events(5)")).to.deep.equal(["$events.itemId"]);
    expect(await problems('$events({"id": "x"})')).to.deep.equal(["$events.itemId"]);
    expect(await problems(`$events("${"é".repeat(3000)}")`)).to.deep.equal(["$events.itemId"]);
    expect(await problems(`$events(${id}, [1])`)).to.deep.equal(["$events.options"]);
    expect(await problems(`$events(${id}, { "limit": 5 })`)).to.deep.equal(["$events.options.limit"]);
    expect(await problems(`$events(${id}, { "eventDateRange": 5 })`)).to.deep.equal(["$events.options.eventDateRange"]);
    expect(await problems(`$events(${id}, { "eventDateRange": { "period": "Custom range", "from": "2024-13-45", "to": "2024-01-02T00:00:00Z" } })`)).to.deep.equal(["$events.options.eventDateRange.from"]);
    // A good call with an id in capitals still reads the item.
    const ok = await call("POST", "/api-definitions/test", { definition: { query: 'Agreement ?a; entity:key "A".', transform: `$count($events(${id.toUpperCase()}, { "eventDateRange": ${JSON.stringify(JANUARY)} }))` } });
    expect(ok.json()).to.deep.include({ result: 3, problems: [] });
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
