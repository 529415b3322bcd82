import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import type { LightMyRequestResponse } from "fastify";
import { EXTERNAL_ID_MAX_LENGTH, MAX_OFFSET } from "../../src/input.js";
import { MAX_PARAM_LENGTH } from "../../src/http/input.js";
import { describeEachBackend } from "../support/backends.js";
import { adminServer, testServer, type TestServer } from "../support/server.js";

type Problem = { status: number; code: string; title: string; type: string; detail: string; errors?: { path?: string; message: string }[] };

/** A documented problem: its status and code, problem+json, the contract's fields, and no SQL in it. */
function expectProblem(res: LightMyRequestResponse, status: number, code = "INVALID_REQUEST"): Problem {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  const body = res.json() as Problem;
  expect(body).to.include({ status, code });
  expect(body.type).to.be.a("string");
  expect(body.title).to.be.a("string");
  expect(body.detail).to.be.a("string");
  expect(JSON.stringify(body)).not.to.match(/\b(select|insert into|update|delete from)\b.*\b(from|where|set|values)\b/i);
  return body;
}

/** The problem names `path` among its errors. */
function expectPath(body: Problem, path: string): void {
  expect(body.errors?.map((e) => e.path), JSON.stringify(body)).to.include(path);
}

const uuid = "3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b";
const DAY = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };

describeEachBackend("input at the edge", (ctx) => {
  const suite = adminServer(ctx);

  const headers = () => ({ authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant });
  const call = (method: "POST" | "PUT" | "PATCH" | "GET" | "DELETE", url: string, payload?: unknown, extra: Record<string, string> = {}) =>
    suite.server.app.inject({ method, url, payload: payload as string, headers: { ...headers(), ...extra } });
  const raw = (method: "POST" | "PUT", url: string, text: string, contentType = "application/json") => call(method, url, text, { "content-type": contentType });
  const item = async () => {
    const res = await call("POST", "/graph/entities", { entities: [{ type: "Item", key: "m1", attributes: { itemAction: "INGEST" } }] });
    expect(res.statusCode, res.body).to.equal(200);
    return (res.json() as { entities: { id: string }[] }).entities[0]!.id;
  };
  const entityCount = async () => (await call("GET", "/graph/entities")).json<{ total: number }>().total;
  const storedEvents = async (id: string) =>
    (await call("POST", `/items/${id}/events/query`, { eventDateRange: { period: "Custom range", from: "1000-01-01T00:00:00Z", to: "9999-12-31T23:59:59.999Z", timeZone: "UTC" } })).json<{
      events: { timestamp: string; sourceId?: string }[];
    }>().events;
  const definitionCount = async () => (await call("GET", "/api-definitions")).json<{ total: number }>().total;
  const definition = (extra: Record<string, unknown> = {}) => ({ externalId: "d1", query: "Item ?i.", transform: "", ...extra });

  describe("text: NUL and lone surrogates, checked once for the whole request", () => {
    it("refuses them in an entity's key, attribute value and attribute key, naming each, and stores nothing", async () => {
      const body = expectProblem(
        await call("POST", "/graph/entities", {
          entities: [
            { type: "Meter", key: "a\u0000b" },
            { type: "Meter", key: "ok", attributes: { name: "x\ud800y", "k\u0000": 1, low: "\udc00" } },
          ],
        }),
        400,
      );
      expectPath(body, "body.entities[0].key");
      expectPath(body, "body.entities[1].attributes.name");
      expectPath(body, 'body.entities[1].attributes["k\\u0000"]');
      expectPath(body, "body.entities[1].attributes.low");
      expect(body.errors![0]!.message).to.match(/NUL character/);
      expect(body.errors!.find((e) => e.path === "body.entities[1].attributes.name")!.message).to.match(/lone surrogate \(U\+D800\)/);
      expect(await entityCount()).to.equal(0);
    });

    it("accepts a well-formed surrogate pair (an emoji) and other text as it is", async () => {
      const res = await call("POST", "/graph/entities", { entities: [{ type: "Meter", key: "😀 é \u0001", attributes: { note: "tab\there" } }] });
      expect(res.statusCode, res.body).to.equal(200);
      expect(res.json<{ entities: { key: string; note: string }[] }>().entities[0]).to.include({ key: "😀 é \u0001", note: "tab\there" });
    });

    it("refuses them in a link's relation", async () => {
      const res = await call("POST", "/graph/links", { links: [{ from: { type: "A", key: "a" }, relation: "has\u0000", to: { type: "B", key: "b" } }] });
      expectPath(expectProblem(res, 400), "body.links[0].relation");
    });

    it("refuses them in an event's sourceId, tags and keyValues sent as JSON, and stores nothing", async () => {
      const id = await item();
      const events = [
        { timestamp: "2024-01-01T00:00:00Z", value: 1, sourceId: "s\u0000" },
        { timestamp: "2024-01-01T01:00:00Z", value: 2, tags: ["ok", "\ud83d"] },
        { timestamp: "2024-01-01T02:00:00Z", value: 3, keyValues: { "k\ud800": "v" } },
      ];
      const body = expectProblem(await call("POST", `/items/${id}/events`, { events }), 400);
      expectPath(body, "body.events[0].sourceId");
      expectPath(body, "body.events[1].tags[1]");
      expectPath(body, 'body.events[2].keyValues["k\\ud800"]');
      expect(await storedEvents(id)).to.deep.equal([]);
    });

    it("refuses them row by row in NDJSON and CSV uploads, naming the row and field; ?partial=true stores the good rows", async () => {
      const id = await item();
      const ndjson = ['{"timestamp":"2024-01-01T00:00:00Z","value":1}', '{"timestamp":"2024-01-01T01:00:00Z","value":2,"sourceId":"a\\u0000b"}', '{"timestamp":"2024-01-01T02:00:00Z","value":3,"keyValues":{"k":"\\udfff"}}'].join("\n");
      const body = expectProblem(await raw("POST", `/items/${id}/events`, ndjson, "application/x-ndjson"), 400);
      expectPath(body, "events[1].sourceId");
      expectPath(body, "events[2].keyValues.k");
      expect(await storedEvents(id)).to.deep.equal([]);

      const csv = "timestamp,value,sourceId\n2024-01-01T00:00:00Z,1,good\n2024-01-01T01:00:00Z,2,ba\u0000d\n";
      expectPath(expectProblem(await raw("POST", `/items/${id}/events`, csv, "text/csv"), 400), "events[1].sourceId");
      expect(await storedEvents(id)).to.deep.equal([]);

      const partial = await raw("POST", `/items/${id}/events?partial=true`, csv, "text/csv");
      expect(partial.statusCode, partial.body).to.equal(200);
      expect(partial.json()).to.deep.include({ stored: 1, rejectedTotal: 1 });
      expect((await storedEvents(id)).map((e) => e.sourceId)).to.deep.equal(["good"]);
    });

    it("refuses them in a definition's fields and in apiDefinitionExternalId, and stores nothing", async () => {
      expectPath(expectProblem(await call("POST", "/api-definitions", definition({ name: "n\u0000" })), 400), "body.name");
      expectPath(expectProblem(await call("POST", "/api-definitions", definition({ query: "Item ?i; attribute:name \"\ud800\"." })), 400), "body.query");
      expectPath(expectProblem(await call("POST", "/api-definitions", definition({ data: { queryParameters: [{ name: "p\u0000" }] } })), 400), "body.data.queryParameters[0].name");
      expect(await definitionCount()).to.equal(0);
      const calc = { externalId: "c1", calculationType: "EXPRESSION", data: { calculation: { expression: "a\u0000", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 1 } } } } };
      expectPath(expectProblem(await call("POST", "/calculation-definitions", calc), 400), "body.data.calculation.expression");
      expectPath(expectProblem(await call("POST", "/task-backend/tasks/x/api/request", { apiDefinitionExternalId: "a\ud800" }), 400), "body.apiDefinitionExternalId");
      expectPath(
        expectProblem(await call("POST", "/task-backend/tasks/x/api/request", { apiDefinitionExternalId: "a", queryParameters: { "p\u0000": 1 } }), 400),
        'body.queryParameters["p\\u0000"]',
      );
    });

    it("refuses them in the query string and in path parameters", async () => {
      expectPath(expectProblem(await call("GET", "/graph/entities?type=%00"), 400), "querystring.type");
      expectPath(expectProblem(await call("GET", "/graph/entities?type=ok&offset=%00"), 400), "querystring.offset");
      expectPath(expectProblem(await call("GET", "/api-definitions/a%00b"), 400), "params.externalId");
      expectPath(expectProblem(await call("DELETE", "/calculation-definitions/%00"), 400), "params.externalId");
    });

    it("refuses an X-TENANT-ID that is not visible ASCII, naming the header", async () => {
      const res = await suite.server.app.inject({ method: "GET", url: "/graph/entities", headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": "t\u0001x" } });
      expectPath(expectProblem(res, 400), "headers.x-tenant-id");
    });
  });

  describe("dates: from 1000-01-01T00:00:00Z up to, not including, 9999-12-31T23:59:59.999Z", () => {
    it("stores and reads back the first and the last instant of the range exactly", async () => {
      const id = await item();
      const events = [
        { timestamp: "1000-01-01T00:00:00Z", value: 1 },
        { timestamp: "1582-10-15T12:00:00+01:00", value: 2 },
        { timestamp: "9999-12-31T23:59:59.998Z", value: 3 },
      ];
      const res = await call("POST", `/items/${id}/events`, { events });
      expect(res.statusCode, res.body).to.equal(200);
      expect((await storedEvents(id)).map((e) => e.timestamp)).to.deep.equal(["1000-01-01T00:00:00.000Z", "1582-10-15T11:00:00.000Z", "9999-12-31T23:59:59.998Z"]);
    });

    it("refuses events outside it (timestamp and meta dates), naming the field, and stores nothing", async () => {
      const id = await item();
      for (const [field, value] of [
        ["timestamp", "+100000-01-01T00:00:00Z"],
        ["timestamp", "-200000-01-01T00:00:00Z"],
        ["timestamp", "0999-12-31T23:59:59.999Z"],
        ["timestamp", "0001-01-01T00:00:00Z"],
        ["timestamp", "+010000-01-01T00:00:00Z"],
        ["timestamp", "9999-12-31T23:59:59.999Z"],
        ["entry", "+100000-01-01T00:00:00Z"],
      ] as const) {
        const event = { timestamp: "2024-01-01T00:00:00Z", value: 1, [field]: value };
        const body = expectProblem(await call("POST", `/items/${id}/events`, { events: [{ timestamp: "2024-01-01T01:00:00Z", value: 0 }, event] }), 400);
        expectPath(body, `events[1].${field}`);
        expect(body.errors![0]!.message).to.match(/outside the accepted dates|not an ISO-8601/);
      }
      expect(await storedEvents(id)).to.deep.equal([]);
    });

    it("refuses date ranges and filters outside it, and a range bound that is not text", async () => {
      const id = await item();
      const query = (body: unknown) => call("POST", `/items/${id}/events/query`, body);
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, from: "+100000-01-01T00:00:00Z" } }), 400), "eventDateRange.from");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, to: "+100000-01-01T00:00:00Z" } }), 400), "eventDateRange.to");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, from: "-200000-01-01T00:00:00Z" } }), 400), "eventDateRange.from");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, from: "0999-12-31T23:59:59Z" } }), 400), "eventDateRange.from");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, to: "+010000-01-01T00:00:00Z" } }), 400), "eventDateRange.to");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, from: 0 } }), 400), "eventDateRange.from");
      expectPath(expectProblem(await query({ eventDateRange: { ...DAY, timeZone: 5 } }), 400), "eventDateRange.timeZone");
      expectPath(expectProblem(await query({ eventDateRange: { period: ["Today"] } }), 400), "eventDateRange.period");
      const filter = { metaDates: [{ type: "entry", from: "+100000-01-01T00:00:00Z" }] };
      expectPath(expectProblem(await query({ eventDateRange: DAY, queryOptions: { filter } }), 400), "queryOptions.filter.metaDates[0].from");
      expectPath(expectProblem(await call("POST", "/timeline/query", { itemIds: [id], eventDateRange: { ...DAY, to: "+100000-01-01T00:00:00Z" } }), 400), "eventDateRange.to");
    });

    it("refuses a definition whose timeline has such a date at save (not 201), and stores nothing", async () => {
      const timeline = { name: "t", eventDateRange: { ...DAY, from: "-200000-01-01T00:00:00Z" } };
      const body = expectProblem(await call("POST", "/api-definitions", definition({ data: { timelineParameters: [timeline] } })), 400, "INVALID_DEFINITION");
      expectPath(body, "data.timelineParameters[0].eventDateRange.from");
      expect(await definitionCount()).to.equal(0);
      const calc = { externalId: "c1", calculationType: "EXPRESSION", data: { calculation: { expression: "1", expressionType: "VALUE", eventDateRange: { ...DAY, to: "+100000-01-01T00:00:00Z" } } } };
      expectPath(expectProblem(await call("POST", "/calculation-definitions", calc), 400, "INVALID_DEFINITION"), "data.calculation.eventDateRange.to");
      expectProblem(await call("GET", "/calculation-definitions/c1"), 404, "CALCULATION_DEFINITION_NOT_FOUND");
    });
  });

  describe("option types", () => {
    it("refuses sorting.order that is not an array of known keys, prototype names included", async () => {
      const id = await item();
      await call("POST", `/items/${id}/events`, { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1 }] });
      const sort = (order: unknown) => call("POST", `/items/${id}/events/query`, { eventDateRange: DAY, queryOptions: { sorting: { order } } });
      expectPath(expectProblem(await sort("value-"), 400), "queryOptions.sorting.order");
      for (const key of ["toString", "constructor-", "__proto__", "hasOwnProperty+", "valueOf"]) {
        const body = expectProblem(await sort([key]), 400);
        expectPath(body, "queryOptions.sorting.order[0]");
        expect(body.detail).to.match(/cannot sort by/);
      }
      expectPath(expectProblem(await sort([5]), 400), "queryOptions.sorting.order[0]");
      expectPath(expectProblem(await call("POST", `/items/${id}/events/query`, { eventDateRange: DAY, queryOptions: { sorting: "value" } }), 400), "queryOptions.sorting");
      const sorted = await sort(["value-"]);
      expect(sorted.statusCode, sorted.body).to.equal(200);
    });

    it("refuses a metaDates type, a gap strategy and pagination of the wrong type", async () => {
      const id = await item();
      const query = (queryOptions: unknown) => call("POST", `/items/${id}/events/query`, { eventDateRange: DAY, queryOptions });
      expectPath(expectProblem(await query({ filter: { metaDates: [{ type: "constructor", from: "2024-01-01T00:00:00Z" }] } }), 400), "queryOptions.filter.metaDates[0].type");
      expectPath(expectProblem(await query({ filter: { metaDates: [{ type: "toString", from: "2024-01-01T00:00:00Z" }] } }), 400), "queryOptions.filter.metaDates[0].type");
      expectPath(expectProblem(await query({ aggregation: { interval: "Hourly", gapStrategy: null } }), 400), "queryOptions.aggregation.gapStrategy");
      expectPath(expectProblem(await query({ aggregation: { interval: "Hourly", gapStrategy: { type: "meet", config: "x" } } }), 400), "queryOptions.aggregation.gapStrategy.config");
      expectPath(expectProblem(await query({ aggregation: "Hourly" }), 400), "queryOptions.aggregation");
      expectPath(expectProblem(await query({ pagination: [] }), 400), "queryOptions.pagination");
      expectPath(expectProblem(await query({ pagination: { limit: "5" } }), 400), "queryOptions.pagination.limit");
    });

    it("refuses calculation definitions whose inputDefinitions, scope or items have the wrong type, and stores nothing", async () => {
      const save = (data: unknown) => call("POST", "/calculation-definitions", { externalId: "c1", calculationType: "EXPRESSION", data });
      const calculation = { expression: "a", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 1 } } };
      expectPath(expectProblem(await save({ inputDefinitions: "x", calculation }), 400, "INVALID_DEFINITION"), "data.inputDefinitions");
      expectPath(expectProblem(await save({ inputDefinitions: [null], calculation }), 400, "INVALID_DEFINITION"), "data.inputDefinitions[0]");
      expectPath(expectProblem(await save({ calculation: { ...calculation, scope: "a" } }), 400, "INVALID_DEFINITION"), "data.calculation.scope");
      expectPath(expectProblem(await save({ calculation: { ...calculation, scope: [1] } }), 400, "INVALID_DEFINITION"), "data.calculation.scope");
      expectPath(expectProblem(await save({ calculation: { ...calculation, scope: { a: null } } }), 400, "INVALID_DEFINITION"), "data.calculation.scope.a");
      expectPath(expectProblem(await save({ calculation: { ...calculation, select: 5 } }), 400, "INVALID_DEFINITION"), "data.calculation.select");
      const series = { expression: "a", expressionType: "VALUE", eventDateRange: DAY, queryOptions: { aggregation: { interval: "Hourly" } } };
      expectPath(
        expectProblem(await save({ calculation: { ...series, scope: { a: { timeseries: { items: [{ id: "x" }] } } } } }), 400, "INVALID_DEFINITION"),
        "data.calculation.scope.a.timeseries.items[0].id",
      );
      expectPath(expectProblem(await save({ calculation: { ...series, scope: { a: { timeseries: "x" } } } }), 400, "INVALID_DEFINITION"), "data.calculation.scope.a.timeseries");
      expectPath(expectProblem(await save({ calculation: { ...calculation, queryOptions: null } }), 400, "INVALID_DEFINITION"), "data.calculation.queryOptions");
      // An input named like a member of Object.prototype is not found on the scope's prototype.
      expectPath(expectProblem(await save({ inputDefinitions: [{ name: "toString" }], calculation }), 400, "INVALID_DEFINITION"), "data.inputDefinitions");
      expectProblem(await call("GET", "/calculation-definitions/c1"), 404, "CALCULATION_DEFINITION_NOT_FOUND");
    });

    it("refuses a calculate request whose inputs or options have the wrong type", async () => {
      const series = { expression: "a", expressionType: "VALUE", eventDateRange: DAY, queryOptions: { aggregation: { interval: "Hourly" } }, scope: { a: { timeseries: { items: [{ id: uuid }] } } } };
      const saved = await call("POST", "/calculation-definitions", { externalId: "c1", calculationType: "EXPRESSION", data: { calculation: series } });
      expect(saved.statusCode, saved.body).to.equal(201);
      const calculate = (body: unknown) => call("POST", "/calculation-definitions/c1/calculate", body);
      expectPath(expectProblem(await calculate({ inputs: { a: { items: [{ id: "x" }] } } }), 400), "body.inputs.a.items.0.id");
      expectPath(expectProblem(await calculate({ inputs: { a: { items: [{ id: `urn:uuid:${uuid}` }] } } }), 400), "body.inputs.a.items.0.id");
      expectProblem(await calculate({ queryOptions: null }), 400);
      expectPath(expectProblem(await calculate({ queryOptions: { sorting: { order: ["constructor-"] } } }), 400), "queryOptions.sorting.order[0]");
      const ok = await calculate({ inputs: { constructor: { value: 1 } } });
      expect(ok.statusCode, ok.body).to.equal(200);
      expect(ok.json()).to.deep.equal({ value: null });
    });
  });

  describe("numbers and ids", () => {
    it(`bounds offsets at ${MAX_OFFSET}: beyond is a 400 naming the field, the bound itself an empty page`, async () => {
      const id = await item();
      const page = (pagination: unknown) => call("POST", `/items/${id}/events/query`, { eventDateRange: DAY, queryOptions: { pagination } });
      expectPath(expectProblem(await page({ offset: 1e300 }), 400), "queryOptions.pagination.offset");
      expectPath(expectProblem(await page({ offset: MAX_OFFSET + 1 }), 400), "queryOptions.pagination.offset");
      expectPath(expectProblem(await page({ limit: 1e300 }), 400), "queryOptions.pagination.limit");
      const last = await page({ offset: MAX_OFFSET, limit: 10_000 });
      expect(last.statusCode, last.body).to.equal(200);
      expect(last.json()).to.deep.equal({ events: [] });

      expectPath(expectProblem(await call("GET", "/graph/entities?offset=9999999999999999999"), 400), "querystring.offset");
      expectPath(expectProblem(await call("GET", `/api-definitions?offset=${MAX_OFFSET + 1}`), 400), "querystring.offset");
      const entities = await call("GET", `/graph/entities?offset=${MAX_OFFSET}`);
      expect(entities.statusCode, entities.body).to.equal(200);
      expect(entities.json()).to.deep.include({ entities: [], offset: MAX_OFFSET });
    });

    it("answers a bucket whose values add up beyond a double with a 422 naming the metric; min and max still answer", async () => {
      const id = await item();
      const events = [
        { timestamp: "2024-01-01T00:00:00Z", value: 1.7e308, sourceId: "a" },
        { timestamp: "2024-01-01T00:10:00Z", value: 1.7e308, sourceId: "b" },
      ];
      expect((await call("POST", `/items/${id}/events`, { events })).statusCode).to.equal(200);
      const aggregate = (metric: string) => call("POST", `/items/${id}/events/query`, { eventDateRange: DAY, queryOptions: { aggregation: { metric, interval: "Daily" } } });
      for (const metric of ["avg", "sum"]) {
        const body = expectProblem(await aggregate(metric), 422);
        expectPath(body, "queryOptions.aggregation.metric");
        expect(body.detail).to.match(new RegExp(`beyond the range of a double .* metric ${metric};`));
      }
      expect((await aggregate("max")).json()).to.deep.equal({ buckets: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 1.7e308 }] });
    });

    it("takes ids as plain uuids only: urn:uuid:, braces and other text are a 400 naming the parameter", async () => {
      const id = await item();
      for (const bad of [`urn:uuid:${id}`, `{${id}}`, "not-a-uuid", `${id}0`]) {
        const path = encodeURIComponent(bad);
        expectPath(expectProblem(await call("GET", `/graph/entities/${path}`), 400), "params.id");
        expectPath(expectProblem(await call("DELETE", `/graph/entities/${path}`), 400), "params.id");
        expectPath(expectProblem(await call("POST", `/items/${path}/events`, { events: [] }), 400), "params.itemId");
        expectPath(expectProblem(await call("POST", `/items/${path}/events/query`, { eventDateRange: DAY }), 400), "params.itemId");
      }
      const link = await call("POST", "/graph/links", { links: [{ from: { id: `urn:uuid:${id}` }, relation: "r", to: { id } }] });
      expectProblem(link, 400);
      expectPath(expectProblem(await call("POST", "/timeline/query", { itemIds: [`urn:uuid:${id}`], eventDateRange: DAY }), 400), "itemIds[0]");
      // The entity is still there, and an upper-case uuid finds it.
      const found = await call("GET", `/graph/entities/${id.toUpperCase()}`);
      expect(found.statusCode, found.body).to.equal(200);
    });
  });

  describe(`externalId: at most ${EXTERNAL_ID_MAX_LENGTH} characters, in a body and in a path alike`, () => {
    it("creates, reads, replaces, (de)activates, requests and deletes an API definition of the longest externalId", async () => {
      const longest = "x".repeat(EXTERNAL_ID_MAX_LENGTH - 4) + ".a:~";
      const created = await call("POST", "/api-definitions", definition({ externalId: longest }));
      expect(created.statusCode, created.body).to.equal(201);
      expect((await call("GET", `/api-definitions/${longest}`)).statusCode).to.equal(200);
      const replaced = await call("PUT", `/api-definitions/${longest}`, definition({ externalId: longest, name: "renamed" }));
      expect(replaced.statusCode, replaced.body).to.equal(200);
      expect((await call("PATCH", `/api-definitions/${longest}`, { active: true })).statusCode).to.equal(200);
      const requested = await call("POST", "/task-backend/tasks/x/api/request", { apiDefinitionExternalId: longest });
      expect(requested.statusCode, requested.body).to.equal(200);
      expect((await call("DELETE", `/api-definitions/${longest}`)).statusCode).to.equal(204);
      expectProblem(await call("GET", `/api-definitions/${longest}`), 404, "API_DEFINITION_NOT_FOUND");
    });

    it("does the same for a calculation definition", async () => {
      const longest = "c".repeat(EXTERNAL_ID_MAX_LENGTH);
      const body = { externalId: longest, calculationType: "EXPRESSION", data: { calculation: { expression: "a + 1", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 1 } } } } };
      expect((await call("POST", "/calculation-definitions", body)).statusCode).to.equal(201);
      expect((await call("GET", `/calculation-definitions/${longest}`)).statusCode).to.equal(200);
      expect((await call("PUT", `/calculation-definitions/${longest}`, body)).statusCode).to.equal(200);
      expect((await call("POST", `/calculation-definitions/${longest}/calculate`, {})).json()).to.deep.equal({ value: 2 });
      expect((await call("DELETE", `/calculation-definitions/${longest}`)).statusCode).to.equal(204);
    });

    it("answers one character more with a 400 naming the field everywhere, and stores nothing", async () => {
      const tooLong = "x".repeat(EXTERNAL_ID_MAX_LENGTH + 1);
      expectPath(expectProblem(await call("POST", "/api-definitions", definition({ externalId: tooLong })), 400), "body.externalId");
      for (const method of ["GET", "DELETE"] as const) {
        expectPath(expectProblem(await call(method, `/api-definitions/${tooLong}`), 400), "params.externalId");
        expectPath(expectProblem(await call(method, `/calculation-definitions/${tooLong}`), 400), "params.externalId");
      }
      expectPath(expectProblem(await call("PATCH", `/api-definitions/${tooLong}`, { active: false }), 400), "params.externalId");
      expectPath(expectProblem(await call("POST", "/task-backend/tasks/x/api/request", { apiDefinitionExternalId: tooLong }), 400), "body.apiDefinitionExternalId");
      expect(await definitionCount()).to.equal(0);
      // Past the router's own bound the answer is a 414, as problem+json.
      const body = expectProblem(await call("GET", `/api-definitions/${"x".repeat(MAX_PARAM_LENGTH + 1)}`), 414);
      expect(body.detail).to.equal(`a path segment is longer than ${MAX_PARAM_LENGTH} characters`);
    });
  });

  describe("prototype keys", () => {
    it("refuses __proto__ and constructor.prototype keys at any depth with a 400 naming the key, pollutes nothing, stores nothing", async () => {
      const texts = [
        ['{"entities":[{"type":"M","key":"k","attributes":{"__proto__":{"polluted":1}}}]}', "body.entities[0].attributes.__proto__"],
        ['{"entities":[{"type":"M","key":"k","attributes":{"constructor":{"prototype":{"polluted":1}}}}]}', "body.entities[0].attributes.constructor.prototype"],
        ['{"__proto__":{"polluted":1},"entities":[]}', "body.__proto__"],
      ];
      for (const [text, path] of texts) {
        const body = expectProblem(await raw("POST", "/graph/entities", text!), 400);
        expectPath(body, path!);
        expect(body.detail).to.match(/refused: it names .*prototype/);
      }
      const id = await item();
      const ndjson = '{"timestamp":"2024-01-01T00:00:00Z","value":1,"keyValues":{"__proto__":"x"}}';
      expectPath(expectProblem(await raw("POST", `/items/${id}/events`, ndjson, "application/x-ndjson"), 400), "events[0].keyValues.__proto__");
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      expect(Object.prototype).not.to.have.property("polluted");
      expect(await entityCount()).to.equal(1);
      expect(await storedEvents(id)).to.deep.equal([]);
    });

    it("takes a key merely named constructor, or prototype elsewhere, as plain data", async () => {
      const res = await raw("POST", "/graph/entities", '{"entities":[{"type":"M","key":"k","attributes":{"constructor":"c","prototype":"p"}}]}');
      expect(res.statusCode, res.body).to.equal(200);
      expect(res.json<{ entities: Record<string, unknown>[] }>().entities[0]).to.include({ constructor: "c", prototype: "p" });
    });
  });

  describe("charset", () => {
    it("answers a JSON body declared in any charset but UTF-8 with 415, before reading it", async () => {
      const body = JSON.stringify({ entities: [{ type: "M", key: "k" }] });
      for (const type of ["application/json; charset=utf-16", "application/json;charset=UTF-16LE", 'application/json; charset="latin1"', "application/json; charset=iso-8859-1"]) {
        const res = await suite.server.app.inject({ method: "POST", url: "/graph/entities", payload: Buffer.from(body, "utf16le"), headers: { ...headers(), "content-type": type } });
        expectPath(expectProblem(res, 415), "headers.content-type");
      }
      const csv = await raw("POST", `/items/${uuid}/events`, "timestamp,value\n", "text/csv; charset=utf-16");
      expectProblem(csv, 415);
      expect(await entityCount()).to.equal(0);
      for (const type of ["application/json; charset=utf-8", 'application/json; charset="UTF-8"', "application/json;charset=utf8", "application/json"]) {
        const res = await raw("POST", "/graph/entities", body, type);
        expect(res.statusCode, `${type}: ${res.body}`).to.equal(200);
      }
    });
  });

  describe("fastify's and Node's own errors, over a real socket", () => {
    let port: number;
    let small: TestServer;
    before(async () => {
      small = await testServer(ctx.db, { BODY_LIMIT_BYTES: "1024" });
      await small.app.listen({ port: 0, host: "127.0.0.1" });
      port = (small.app.server.address() as AddressInfo).port;
    });
    after(() => small.app.close());

    /** Sends raw bytes and reads the whole answer: status, headers and the parsed body. */
    const send = (bytes: string) =>
      new Promise<{ status: number; headers: Record<string, string>; body: Problem }>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1");
        const chunks: Buffer[] = [];
        socket.on("data", (c: Buffer) => chunks.push(c));
        socket.on("error", reject);
        socket.on("close", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const [head, ...rest] = text.split("\r\n\r\n");
          const [statusLine, ...lines] = head!.split("\r\n");
          const headerMap = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
          try {
            resolve({ status: Number(statusLine!.split(" ")[1]), headers: headerMap, body: JSON.parse(rest.join("\r\n\r\n")) as Problem });
          } catch (err) {
            reject(new Error(`${bytes.slice(0, 60)}: the answer is not JSON: ${text}`, { cause: err }));
          }
        });
        // Written, not ended: a half-closed socket may be closed by the server before it answers.
        socket.write(bytes);
      });
    const request = (lines: string[], body = "") => `${lines.join("\r\n")}\r\nConnection: close\r\n\r\n${body}`;
    const auth = () => [`Authorization: Bearer ${suite.token}`, `X-Tenant-Id: ${ctx.tenant}`, "Host: x"];
    const expectRaw = (res: { status: number; headers: Record<string, string>; body: Problem }, status: number) => {
      expect(res.status, JSON.stringify(res.body)).to.equal(status);
      expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
      expect(res.body).to.include({ status, code: "INVALID_REQUEST" });
      expect(res.body.type).to.be.a("string");
      expect(res.body.title).to.be.a("string");
      expect(res.body.detail).to.be.a("string");
      return res.body;
    };

    it("431: headers too large", async () => {
      const body = expectRaw(await send(request(["GET /health HTTP/1.1", "Host: x", `X-Big: ${"a".repeat(20_000)}`])), 431);
      expect(body.detail).to.match(/headers are larger/);
    });

    it("400: a malformed Content-Length, a header with a control character, a broken request line", async () => {
      expectRaw(await send(request(["POST /graph/entities HTTP/1.1", ...auth(), "Content-Type: application/json", "Content-Length: abc"], "{}")), 400);
      expectRaw(await send(request(["GET /health HTTP/1.1", "Host: x", "X-Tenant-Id: a\u0000b"])), 400);
      expectRaw(await send("NOT HTTP AT ALL\r\n\r\n"), 400);
    });

    it("414, 413, 415, 404, a bad percent-encoding and a JSON syntax error", async () => {
      expectRaw(await send(request([`GET /api-definitions/${"x".repeat(MAX_PARAM_LENGTH + 1)} HTTP/1.1`, ...auth()])), 414);
      const big = JSON.stringify({ entities: [{ type: "T", key: "x".repeat(2000) }] });
      expectRaw(await send(request(["POST /graph/entities HTTP/1.1", ...auth(), "Content-Type: application/json", `Content-Length: ${big.length}`], big)), 413);
      expectRaw(await send(request(["POST /graph/entities HTTP/1.1", ...auth(), "Content-Type: text/plain", "Content-Length: 2"], "hi")), 415);
      expectRaw(await send(request(["GET /no/such/route HTTP/1.1", "Host: x"])), 404);
      expectRaw(await send(request(["GET /graph/entities/%E0%A4%A HTTP/1.1", ...auth()])), 400);
      const body = expectRaw(await send(request(["POST /graph/entities HTTP/1.1", ...auth(), "Content-Type: application/json", "Content-Length: 9"], '{"a": [1,')), 400);
      expect(body.detail).to.match(/not valid JSON/);
    });
  });
});
