import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { testServer, type TestServer } from "../support/server.js";
import { seedSiteSeries, SITE_NET_BLOCK, SITE_QUARTERS, SITE_RANGE, SITE_SELECT } from "../support/site-series.js";
import { adminToken } from "../support/tokens.js";

const RANGE = SITE_RANGE;
const QUARTERS = SITE_QUARTERS;
const SELECT = SITE_SELECT;

describeEachBackend("calculation definitions", (ctx) => {
  let server: TestServer;
  let token: string;
  let prod: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());
  beforeEach(async () => {
    ({ prod } = await seedSiteSeries(ctx.db.knex, ctx.tenant));
  });

  const call = (method: "POST" | "PUT" | "GET" | "DELETE", url: string, payload?: unknown) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });
  const define = async (externalId: string, calculation: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const res = await call("POST", "/calculation-definitions", { externalId, calculationType: "EXPRESSION", data: { calculation }, ...extra });
    expect(res.statusCode, res.body).to.equal(201);
  };
  const calculate = async (externalId: string, body: unknown = {}) => {
    const res = await call("POST", `/calculation-definitions/${externalId}/calculate`, body);
    expect(res.statusCode, res.body).to.equal(200);
    return res.json() as { buckets?: { timestamp: string; value: number | null }[]; value?: number | null };
  };
  const values = async (externalId: string, body: unknown = {}) => (await calculate(externalId, body)).buckets!.map((b) => b.value);
  const consScope = { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } } };

  it("calculates the specification's derived series: a − b over two selected items, 15-minute buckets, first and last removed", async () => {
    await define("net", SITE_NET_BLOCK);
    expect((await calculate("net")).buckets).to.deep.equal([
      { timestamp: "2024-01-01T10:15:00.000Z", value: 4 },
      { timestamp: "2024-01-01T10:30:00.000Z", value: 5 },
      { timestamp: "2024-01-01T10:45:00.000Z", value: -9 },
    ]);
  });

  it("reads a derived item's events as the buckets of the calculation its ItemDefinition names", async () => {
    await define("net", {
      select: SELECT,
      expression: "a - b",
      queryOptions: QUARTERS,
      removeBuckets: [0, -1],
      scope: { a: { timeseries: { selectVariable: "{{?cons}}" } }, b: { timeseries: { selectVariable: "{{?prod}}" } } },
    });
    const [derived] = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Item", key: "net", attributes: { itemAction: "CALCULATE" } },
      { type: "ItemDefinition", key: "net-definition", attributes: { calculationDefinition: "net" } },
    ]);
    await createLinks(ctx.db.knex, ctx.tenant, [{ from: { type: "Item", key: "net" }, relation: "definedBy", to: { type: "ItemDefinition", key: "net-definition" } }]);
    const res = await call("POST", `/items/${derived!.id}/events/query`, { eventDateRange: RANGE, queryOptions: QUARTERS });
    expect(res.statusCode, res.body).to.equal(200);
    expect(res.json()).to.deep.equal({
      buckets: [
        { timestamp: "2024-01-01T10:15:00.000Z", value: 4 },
        { timestamp: "2024-01-01T10:30:00.000Z", value: 5 },
        { timestamp: "2024-01-01T10:45:00.000Z", value: -9 },
      ],
    });
  });

  it("takes items from the inputs, options from the scope, and events placed in their buckets", async () => {
    await define("doubled", { select: SELECT, expression: "a * 2", eventDateRange: RANGE, queryOptions: QUARTERS, scope: consScope });
    expect(await values("doubled", { inputs: { a: { items: [{ id: prod }] } } })).to.deep.equal([null, 2, 4, 20, null]);
    await define("peak", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}", queryOptions: { aggregation: { metric: "max" } } } } } });
    expect(await values("peak")).to.deep.equal([2, 5, 7, 1, 4]);
    await define("latest", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}", queryType: "EVENTS" } } } });
    expect(await values("latest")).to.deep.equal([2, 5, 7, 1, 4]);
    await define("first", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { type: "firstValue", timeseries: { selectVariable: "{{?cons}}" } } } });
    expect(await values("first")).to.deep.equal([3, 3, 3, 3, 3]);
    await define("lastv", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { type: "lastValue", timeseries: { selectVariable: "{{?cons}}" } } } });
    expect(await values("lastv")).to.deep.equal([4, 4, 4, 4, 4]);
  });

  it("applies a VALUE scope in every bucket, and takes it from the inputs when given", async () => {
    await define("scaled", { select: SELECT, expression: "a * f", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { ...consScope, f: { type: "VALUE", value: 2 } } });
    expect(await values("scaled")).to.deep.equal([6, 10, 14, 2, 8]);
    expect(await values("scaled", { inputs: { f: { value: -1 } } })).to.deep.equal([-3, -5, -7, -1, -4]);
  });

  it("reduces a series to one value of each reduce type", async () => {
    const reduced = async (reduceType: string) => {
      await define(`r-${reduceType}`, {
        select: SELECT,
        expression: "r",
        expressionType: "VALUE",
        eventDateRange: RANGE,
        scope: { r: { type: "REDUCE", timeseries: { selectVariable: "{{?cons}}" }, reduce: { reduceType } } },
      });
      return (await calculate(`r-${reduceType}`)).value;
    };
    // cons values 1 2 5 7 1 4 → sorted 1 1 2 4 5 7
    const expected: Record<string, number> = {
      sum: 20, avg: 20 / 6, count: 6, min: 1, max: 7, median: 3, percentile10: 1, percentile25: 1.25, percentile50: 3, percentile75: 4.75, percentile90: 6,
      stddev: Math.sqrt(((1 - 20 / 6) ** 2 * 2 + (2 - 20 / 6) ** 2 + (4 - 20 / 6) ** 2 + (5 - 20 / 6) ** 2 + (7 - 20 / 6) ** 2) / 5),
      mad: 2, // |x − 3| = 2 1 2 4 2 1 → sorted 1 1 2 2 2 4 → median 2
    };
    for (const [type, want] of Object.entries(expected)) expect(await reduced(type), type).to.be.closeTo(want, 1e-12);
  });

  it("lags a series, and carries recurrences through previousValue: a running sum and an exponential moving average", async () => {
    await define("lagged", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}", lag: 1 } } } });
    expect(await values("lagged")).to.deep.equal([null, 3, 5, 7, 1]);
    await define("running", { select: SELECT, expression: "(index == 0 ? 0 : previousValue) + a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: consScope });
    expect(await values("running")).to.deep.equal([3, 8, 15, 16, 20]);
    await define("ema", { select: SELECT, expression: "index == 0 ? a : 0.5 * a + 0.5 * previousValue", eventDateRange: RANGE, queryOptions: QUARTERS, scope: consScope });
    expect(await values("ema")).to.deep.equal([3, 4, 5.5, 3.25, 3.625]);
    await define("internals", { select: SELECT, expression: "index * 1000 + (time - from) / 60000 + interval / 60000 / 15 + (index > 0 ? firstValue : 0)", eventDateRange: RANGE, queryOptions: QUARTERS, scope: consScope });
    expect(await values("internals")).to.deep.equal([1, 1000 + 15 + 1 + 1, 2000 + 30 + 1 + 1, 3000 + 45 + 1 + 1, 4000 + 60 + 1 + 1]);
  });

  it("picks one bucket of a series with bucketIndex in a VALUE expression", async () => {
    await define("second", { select: SELECT, expression: "a", expressionType: "VALUE", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}", bucketIndex: 1 } } } });
    expect((await calculate("second")).value).to.equal(5);
    await define("last", { select: SELECT, expression: "a", expressionType: "VALUE", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}", bucketIndex: -1 } } } });
    expect((await calculate("last")).value).to.equal(4);
  });

  it("combines several items per bucket with each metric", async () => {
    const both = 'Site ?site; entity:key "S1"; link:meter Item:?m.';
    // cons 3 5 7 1 4, prod null 1 2 10 null
    const expected: Record<string, (number | null)[]> = {
      sum: [3, 6, 9, 11, 4],
      avg: [3, 3, 4.5, 5.5, 4],
      min: [3, 1, 2, 1, 4],
      max: [3, 5, 7, 10, 4],
      count: [1, 2, 2, 2, 1],
      multiply: [3, 5, 14, 10, 4],
      // The earliest / latest event among both items in each quarter.
      open: [1, 1, 2, 10, 4],
      close: [2, 5, 7, 1, 4],
    };
    for (const [metric, want] of Object.entries(expected)) {
      await define(`m-${metric}`, { select: both, expression: "m", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { m: { timeseries: { selectVariable: "{{?m}}", metric } } } });
      expect(await values(`m-${metric}`), metric).to.deep.equal(want);
    }
  });

  it("nests expressions three deep and refuses a reference cycle, naming it", async () => {
    await define("level1", { select: SELECT, expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: consScope });
    await define("level2", { expression: "x * 2", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { x: { type: "EXPRESSION", expression: "level1" } } });
    await define("level3", { expression: "y + 1", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { y: { type: "EXPRESSION", expression: "level2" } } });
    expect(await values("level3")).to.deep.equal([7, 11, 15, 3, 9]);
    const cycle = await call("PUT", "/calculation-definitions/level1", {
      externalId: "level1",
      calculationType: "EXPRESSION",
      data: { calculation: { expression: "z", scope: { z: { type: "EXPRESSION", expression: "level3" } } } },
    });
    expect(cycle.statusCode).to.equal(400);
    expect(cycle.json()).to.include({ code: "INVALID_DEFINITION" });
    expect((cycle.json() as { errors: { message: string }[] }).errors.map((e) => e.message)).to.include("reference cycle: level1 → level3 → level2 → level1");
  });

  it("evaluates a calculation model's steps in dependency order, and a state expression on last values", async () => {
    const res = await call("POST", "/calculation-definitions", {
      externalId: "model",
      calculationType: "CALCULATION",
      data: {
        calculation: {
          select: SELECT,
          eventDateRange: RANGE,
          queryOptions: QUARTERS,
          steps: [
            { name: "total", expression: "doubled + f" },
            { name: "doubled", expression: "a * 2" },
          ],
          output: "total",
          scope: { ...consScope, f: { type: "VALUE", value: 1 } },
        },
      },
    });
    expect(res.statusCode, res.body).to.equal(201);
    expect(await values("model")).to.deep.equal([7, 11, 15, 3, 9]);
    const state = await call("POST", "/calculation-definitions", {
      externalId: "state",
      calculationType: "STATE-EXPRESSION",
      data: { calculation: { select: SELECT, expression: "a - b", eventDateRange: RANGE, scope: { a: { timeseries: { selectVariable: "{{?cons}}" } }, b: { timeseries: { selectVariable: "{{?prod}}" } } } } },
    });
    expect(state.statusCode, state.body).to.equal(201);
    expect(await calculate("state")).to.deep.equal({ value: 4 - 10 });
    expect(await calculate("state", { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-01T10:41:00Z" } })).to.deep.equal({ value: 7 - 2 });
  });

  it("refuses an invalid definition with every problem, and a malicious expression", async () => {
    const res = await call("POST", "/calculation-definitions", {
      externalId: "bad",
      calculationType: "EXPRESSION",
      data: { calculation: { expression: 'import({}) + c + evaluate("1")', scope: { "1a": { type: "VALUE", value: 1 }, e: { type: "EXPRESSION", expression: "missing" } } } },
    });
    expect(res.statusCode).to.equal(400);
    const messages = (res.json() as { errors: { message: string }[] }).errors.map((e) => e.message);
    expect(messages.some((m) => m.startsWith('scope name "1a" must start with a letter'))).to.equal(true);
    expect(messages).to.include('there is no calculation definition "missing" in this tenant');
    expect(messages.some((m) => m.startsWith("function import is not allowed"))).to.equal(true);
    expect(messages.some((m) => m.startsWith('unknown variable "c"'))).to.equal(true);
    expect(messages.some((m) => m.startsWith("function evaluate is not allowed"))).to.equal(true);
  });

  it("stops a calculation past its time limit, and answers 404 for an unknown one", async () => {
    await define("long", {
      select: SELECT,
      // Empty buckets are null (NaN inside the expression): counted as 0 here.
      expression: "(index == 0 ? 0 : previousValue) + (isNaN(a) ? 0 : a)",
      eventDateRange: { period: "Custom range", from: "2023-06-01T00:00:00Z", to: "2024-05-01T00:00:00Z" },
      queryOptions: { aggregation: { metric: "sum", interval: "5 minute" } },
      scope: consScope,
    });
    const hurried = await testServer(ctx.db, { CALCULATION_TIMEOUT_MS: "1" });
    try {
      const res = await hurried.app.inject({ method: "POST", url: "/calculation-definitions/long/calculate", payload: {}, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });
      expect(res.statusCode).to.equal(422);
      expect(res.json()).to.include({ code: "CALCULATION_FAILED", detail: "the calculation ran longer than 1 ms and was stopped" });
    } finally {
      await hurried.app.close();
    }
    const full = await calculate("long");
    expect(full.buckets).to.have.length(96_480);
    expect(full.buckets![full.buckets!.length - 1]!.value).to.equal(20);
    const unknown = await call("POST", "/calculation-definitions/nope/calculate", {});
    expect(unknown.statusCode).to.equal(404);
    expect(unknown.json()).to.include({ code: "CALCULATION_DEFINITION_NOT_FOUND" });
  });
});
