import { expect } from "chai";
import { loadConfig } from "../src/config.js";
import { EXAMPLE_DEFINITION, exampleGraph } from "../src/demo/seed.js";
import { ProblemError } from "../src/errors.js";
import { upsertEntities } from "../src/graph/entities.js";
import { createLinks } from "../src/graph/links.js";
import { createServices } from "../src/services.js";
import { ingestEvents } from "../src/timeseries/ingest.js";
import { backPressureDelayMs, nextAttempt, reconnectDelayMs, retriesAfterFailure, retryTimeoutMs, taskOutcome } from "../src/tasks/outcome.js";
import { apiRequest, calculateSeries } from "../src/tasks/tasks.js";
import { objectVariable } from "../src/tasks/variables.js";
import { describeEachBackend } from "./support/backends.js";
import { TEST_JWT_SECRET } from "./support/tokens.js";

describeEachBackend("engine-neutral tasks", (ctx) => {
  const services = () => createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), ctx.db);
  const seed = async () => {
    const { entities, links } = exampleGraph(ctx.tenant, [{ publicId: "AGR-1", accessPoints: [["EAN-1", "GAS"]] }]);
    await upsertEntities(ctx.db.knex, ctx.tenant, entities);
    await createLinks(ctx.db.knex, ctx.tenant, links);
    await services().apiDefinitions.create(ctx.tenant, EXAMPLE_DEFINITION);
  };
  const failure = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (err) {
      return err as ProblemError;
    }
    expect.fail("no error");
  };

  it("api-request answers { <resultVariable>: result }, reading object variables typed or as JSON text", async () => {
    await seed();
    const typed = await apiRequest(services(), { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } }, { tenant: ctx.tenant });
    expect(Object.keys(typed)).to.deep.equal(["result"]);
    // The agreement's one access point, as the example transform shapes it: a run answering null would fail here.
    const [point] = (typed.result as { accessPoints: Record<string, unknown>[] }).accessPoints;
    expect(point).to.include({ externalId: "EAN-1", accessPointType: "GAS" });
    const text = await apiRequest(
      services(),
      { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: '{"publicId":"AGR-1"}', resultVariable: "points" },
      { tenant: ctx.tenant },
    );
    expect(text).to.deep.equal({ points: typed.result });
  });

  it("takes the tenant from the tenantId variable before the task's, and needs one", async () => {
    await seed();
    const byVariable = await apiRequest(services(), { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" }, tenantId: ctx.tenant }, { tenant: "elsewhere" });
    expect((byVariable.result as { accessPoints: unknown[] }).accessPoints).to.have.length(1);
    expect((await failure(apiRequest(services(), { apiDefinitionExternalId: "x" }, {}))).code).to.equal("MISSING_TENANT");
  });

  it("refuses variables of the wrong shape as request problems", async () => {
    const bad = [
      [{}, "process variable apiDefinitionExternalId is required"],
      [{ apiDefinitionExternalId: "x", queryParameters: "{not json" }, "process variable queryParameters must be a JSON object (typed, or as text holding JSON)"],
      [{ apiDefinitionExternalId: "x", resultVariable: "no spaces" }, "process variable resultVariable must be a variable name (letters, digits, _)"],
    ] as const;
    for (const [variables, message] of bad) {
      const err = await failure(apiRequest(services(), variables, { tenant: ctx.tenant }));
      expect(err.code).to.equal("INVALID_REQUEST");
      expect(err.message).to.equal(message);
    }
    expect((await failure(calculateSeries(services(), {}, { tenant: ctx.tenant }))).message).to.match(/give exactly one/);
  });

  it("holds process variables to the REST input limits: NUL, lone surrogates and prototype keys are request problems, not failures", async () => {
    const bad = [
      [{ apiDefinitionExternalId: "a\u0000b" }, "apiDefinitionExternalId", /NUL character/],
      [{ apiDefinitionExternalId: "x", queryParameters: { p: "\ud800" } }, "queryParameters.p", /lone surrogate \(U\+D800\)/],
      [{ apiDefinitionExternalId: "x", queryParameters: '{"__proto__":{"polluted":1}}' }, "queryParameters.__proto__", /refused: it names an object's prototype/],
      [{ apiDefinitionExternalId: "x", tenantId: "t\u0000" }, "tenantId", /NUL character/],
    ] as const;
    for (const [variables, path, message] of bad) {
      const err = await failure(apiRequest(services(), variables, { tenant: ctx.tenant }));
      expect(err.code).to.equal("INVALID_REQUEST");
      expect(err.isClientProblem).to.equal(true);
      expect(err.errors?.[0]?.path).to.equal(path);
      expect(err.message).to.match(message);
    }
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    const item = await failure(calculateSeries(services(), { itemId: `urn:uuid:${"0".repeat(8)}-0000-4000-8000-${"0".repeat(12)}` }, { tenant: ctx.tenant }));
    expect(item.code).to.equal("INVALID_REQUEST");
    expect(item.errors?.[0]?.path).to.equal("itemId");
    expect((await failure(calculateSeries(services(), { calculationDefinitionExternalId: "none" }, { tenant: ctx.tenant }))).code).to.equal("CALCULATION_DEFINITION_NOT_FOUND");
  });
});

describeEachBackend("calculate-series on an item", (ctx) => {
  const services = () => createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), ctx.db);

  it("answers an item's buckets, and refuses raw events (the contract answers buckets or a value)", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "meter", attributes: { itemAction: "INGEST" } }]);
    await ingestEvents(ctx.db.knex, ctx.tenant, [
      { itemId: item!.id, timestamp: "2024-01-01T10:00:00Z", value: 2 },
      { itemId: item!.id, timestamp: "2024-01-01T11:00:00Z", value: 5 },
    ]);
    const eventDateRange = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };
    const summed = await calculateSeries(services(), { itemId: item!.id, eventDateRange, queryOptions: { aggregation: { metric: "sum", interval: "Daily" } } }, { tenant: ctx.tenant });
    expect((summed.result as { buckets: { value: number }[] }).buckets.map((b) => b.value)).to.deep.equal([7]);
    let refused: unknown;
    try {
      await calculateSeries(services(), { itemId: item!.id, eventDateRange }, { tenant: ctx.tenant });
    } catch (err) {
      refused = err;
    }
    expect(refused).to.be.instanceOf(ProblemError);
    expect((refused as ProblemError).code).to.equal("INVALID_REQUEST");
    expect((refused as ProblemError).message).to.match(/queryOptions needs an aggregation/);
  });
});

describe("process variables holding JSON text", () => {
  it("reads keys holding quotes and backslashes right, after decoys for them (V8's escaped-key defect)", () => {
    // Kept alive, these make JSON.parse misread `k"ey` as `k\"e` (docs/decisions/2026-11-23-json-parser-for-escaped-keys.md).
    const decoys = [JSON.parse('{"variableFirst":0,"k\\\\\\"e":0}')];
    expect(objectVariable('{"variableFirst":0,"k\\"ey":1}', "params")).to.deep.equal({ variableFirst: 0, 'k"ey': 1 });
    expect(decoys).to.have.length(1);
  });
});

describe("task outcomes", () => {
  it("makes every 4xx problem a BPMN error with its code, and anything else a retried failure", () => {
    expect(taskOutcome(new ProblemError("API_DEFINITION_NOT_FOUND", "x"))).to.deep.equal({ kind: "bpmnError", code: "API_DEFINITION_NOT_FOUND", message: "x" });
    expect(taskOutcome(new ProblemError("TRANSFORM_FAILED", "y")).kind).to.equal("bpmnError");
    expect(taskOutcome(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }))).to.include({ kind: "failure", code: "UNAVAILABLE" });
    expect(taskOutcome(new TypeError("bug"))).to.include({ kind: "failure", code: "INTERNAL_ERROR" });
  });

  it("counts retries down from the task's (the default, 3 here, when it has none) with an exponential back-off", () => {
    expect([retriesAfterFailure(undefined, 3), retriesAfterFailure(2, 3), retriesAfterFailure(1, 3), retriesAfterFailure(0, 3)]).to.deep.equal([2, 1, 0, 0]);
    expect([retryTimeoutMs(2, 3), retryTimeoutMs(1, 3), retryTimeoutMs(0, 3)]).to.deep.equal([1000, 2000, 4000]);
    expect(retryTimeoutMs(0, 30)).to.equal(300_000);
    expect([nextAttempt(null, 3), nextAttempt(2, 3), nextAttempt(1, 3)]).to.deep.equal([
      { retries: 2, backOffMs: 1000 },
      { retries: 1, backOffMs: 2000 },
      { retries: 0, backOffMs: 4000 },
    ]);
    expect([0, 1, 2, 5, 6, 20].map(reconnectDelayMs)).to.deep.equal([500, 1000, 2000, 16_000, 30_000, 30_000]);
  });

  it("backs off exponentially after back-pressure refusals, with jitter of up to a quarter, capped at 10 s", () => {
    // Without jitter (random 0): doubling from 0.5 s to the cap.
    expect([0, 1, 2, 3, 4, 5, 50].map((n) => backPressureDelayMs(n, 0))).to.deep.equal([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    // The most jitter takes a quarter off; the pauses still grow until the cap.
    expect([0, 1, 2, 3, 4].map((n) => backPressureDelayMs(n, 0.999999))).to.deep.equal([375, 750, 1500, 3000, 6000]);
    for (let n = 0; n < 4; n++) expect(backPressureDelayMs(n + 1, 0.999999)).to.be.greaterThan(backPressureDelayMs(n, 0));
    const drawn = Array.from({ length: 200 }, () => backPressureDelayMs(1));
    expect(Math.min(...drawn)).to.be.at.least(750);
    expect(Math.max(...drawn)).to.be.at.most(1000);
    expect(new Set(drawn).size).to.be.greaterThan(1);
  });
});
