import { expect } from "chai";
import type { LightMyRequestResponse } from "fastify";
import fc from "fast-check";
import { EXPRESSION_LIMIT_CEILINGS } from "../../src/calculation/expression-size.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { expressionText } from "../support/expressions.js";
import { adminToken } from "../support/tokens.js";

type Problem = { status: number; code: string; title: string; type: string; detail: string; errors?: Record<string, unknown>[] };

function expectProblem(res: LightMyRequestResponse, status: number, code: string): Problem {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  const body = res.json() as Problem;
  expect(body).to.include({ status, code });
  return body;
}

const DAY = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };
const HOURLY = { aggregation: { interval: "Hourly" } };

/** s0 = a + index, s1 = s0 + 1, …: the last of n steps is a + index + n − 1. Listed last step first. */
function chainDefinition(externalId: string, n: number, extra: Record<string, unknown> = {}) {
  const steps = Array.from({ length: n }, (_, i) => ({ name: `s${i}`, expression: i === 0 ? "a + index" : `s${i - 1} + 1` })).reverse();
  return { externalId, calculationType: "CALCULATION", data: { calculation: { steps, output: `s${n - 1}`, eventDateRange: DAY, queryOptions: HOURLY, scope: { a: { type: "VALUE", value: 1 } }, ...extra } } };
}

describeEachBackend("limits on user-written work over REST", (ctx) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());

  const call = (method: "POST" | "PUT" | "GET", url: string, payload?: unknown, on: TestServer = server) =>
    on.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });
  const expectNotStored = async (externalId: string) => {
    expectProblem(await call("GET", `/calculation-definitions/${externalId}`), 404, "CALCULATION_DEFINITION_NOT_FOUND");
  };

  it("saves and runs a chain of exactly CALCULATION_MAX_STEPS steps to its exact values", async () => {
    const saved = await call("POST", "/calculation-definitions", chainDefinition("longest", 1000));
    expect(saved.statusCode, saved.body).to.equal(201);
    const res = await call("POST", "/calculation-definitions/longest/calculate", {});
    expect(res.statusCode, res.body).to.equal(200);
    const buckets = (res.json() as { buckets: { timestamp: string; value: number }[] }).buckets;
    expect(buckets).to.have.length(24);
    expect(buckets.map((b) => b.value)).to.deep.equal(Array.from({ length: 24 }, (_, i) => 1 + i + 999));
    expect(buckets[23]).to.deep.equal({ timestamp: "2024-01-01T23:00:00.000Z", value: 1023 });
  });

  it("refuses a CALCULATION of one step more than CALCULATION_MAX_STEPS, naming the limit, and stores nothing", async () => {
    const body = expectProblem(await call("POST", "/calculation-definitions", chainDefinition("too-long", 1001)), 400, "INVALID_DEFINITION");
    const message = "a CALCULATION may have at most 1000 steps (CALCULATION_MAX_STEPS); this one has 1001";
    expect(body.detail).to.equal(`the calculation definition has 1 problem(s); the first: ${message} (data.calculation.steps)`);
    expect(body.errors).to.deep.equal([{ path: "data.calculation.steps", message }]);
    await expectNotStored("too-long");
    // Nor does a replacement change what is stored.
    expect((await call("POST", "/calculation-definitions", chainDefinition("kept", 3))).statusCode).to.equal(201);
    expectProblem(await call("PUT", "/calculation-definitions/kept", chainDefinition("kept", 1001)), 400, "INVALID_DEFINITION");
    expect((await call("GET", "/calculation-definitions/kept")).json()).to.deep.include({ data: chainDefinition("kept", 3).data });
  });

  it("refuses the 20,001-term expression that used to answer 500 with a 400 naming EXPRESSION_MAX_LENGTH and the expression's path", async () => {
    const expression = Array(20_001).fill("1").join("+");
    const res = await call("POST", "/calculation-definitions", { externalId: "sum", calculationType: "EXPRESSION", data: { calculation: { expression, expressionType: "VALUE" } } });
    const body = expectProblem(res, 400, "INVALID_DEFINITION");
    const message = "the expression is 40001 characters long; at most 1000 are allowed (EXPRESSION_MAX_LENGTH)";
    expect(body.detail).to.equal(`the calculation definition has 1 problem(s); the first: ${message} (data.calculation.expression)`);
    expect(body.errors).to.deep.equal([{ path: "data.calculation.expression", message, column: 1001 }]);
    await expectNotStored("sum");
  });

  it("refuses a step nested deeper than EXPRESSION_MAX_DEPTH, naming the limit, the step's path and the column", async () => {
    const deep = "(".repeat(51) + "a" + ")".repeat(51);
    const definition = chainDefinition("deep", 2);
    definition.data.calculation.steps[0]!.expression = deep; // s1, listed first
    const body = expectProblem(await call("POST", "/calculation-definitions", definition), 400, "INVALID_DEFINITION");
    expect(body.errors).to.deep.equal([
      {
        path: "data.calculation.steps[0].expression",
        message: "the expression nests deeper than 50 levels (parentheses, function calls, unary, power and conditional operators; EXPRESSION_MAX_DEPTH)",
        column: 51,
      },
    ]);
    await expectNotStored("deep");
  });

  it("checks the same limits at run time: a definition stored under higher ones is refused, naming the limit", async () => {
    expect((await call("POST", "/calculation-definitions", chainDefinition("twenty", 20))).statusCode).to.equal(201);
    const stricter = await testServer(ctx.db, { CALCULATION_MAX_STEPS: "10" });
    try {
      const body = expectProblem(await call("POST", "/calculation-definitions/twenty/calculate", {}, stricter), 400, "INVALID_DEFINITION");
      expect(body.detail).to.equal('stored calculation definition "twenty" is not valid: a CALCULATION may have at most 10 steps (CALCULATION_MAX_STEPS); this one has 20');
    } finally {
      await stricter.app.close();
    }
  });

  it("stops a big calculation past a tiny CALCULATION_TIMEOUT_MS with 422 CALCULATION_FAILED naming the time-out", async () => {
    // 1,000 steps in each of 8,928 five-minute buckets: nine million step evaluations.
    const month = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-02-01T00:00:00Z", timeZone: "UTC" };
    expect((await call("POST", "/calculation-definitions", chainDefinition("big", 1000, { eventDateRange: month, queryOptions: { aggregation: { interval: "5 minute" } } }))).statusCode).to.equal(201);
    const hurried = await testServer(ctx.db, { CALCULATION_TIMEOUT_MS: "1" });
    try {
      const body = expectProblem(await call("POST", "/calculation-definitions/big/calculate", {}, hurried), 422, "CALCULATION_FAILED");
      expect(body.detail).to.equal("the calculation ran longer than 1 ms and was stopped");
    } finally {
      await hurried.app.close();
    }
  });

  it("answers random long and deep expressions with a stored definition and a value, or a 400, never a 500, at the highest limits", async () => {
    const generous = await testServer(ctx.db, { EXPRESSION_MAX_LENGTH: String(EXPRESSION_LIMIT_CEILINGS.maxLength), EXPRESSION_MAX_DEPTH: String(EXPRESSION_LIMIT_CEILINGS.maxDepth) });
    after(() => generous.app.close());
    let n = 0;
    await fc.assert(
      fc.asyncProperty(expressionText, async (expression) => {
        const externalId = `random-${n++}`;
        const scope = { a: { type: "VALUE", value: 2 }, b: { type: "VALUE", value: 3 } };
        const definition = { externalId, calculationType: "EXPRESSION", data: { calculation: { expression, expressionType: "VALUE", eventDateRange: DAY, scope } } };
        const saved = await call("POST", "/calculation-definitions", definition, generous);
        if (saved.statusCode === 400) {
          expect((saved.json() as Problem).code).to.equal("INVALID_DEFINITION");
          return;
        }
        expect(saved.statusCode, saved.body).to.equal(201);
        const run = await call("POST", `/calculation-definitions/${externalId}/calculate`, {}, generous);
        expect(run.statusCode, run.body).to.equal(200);
        const value = (run.json() as { value: number | null }).value;
        expect(value === null || Number.isFinite(value)).to.equal(true);
      }),
      { numRuns: 40 },
    );
  });

  it("refuses Monthly buckets over the years 1000–9999 (the accepted dates) with the cap's 400, counted not enumerated, before any event is read", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "meter", attributes: { itemAction: "INGEST" } }]);
    let eventQueries = 0;
    const count = (q: { sql: string }) => {
      if (/"events"/.test(q.sql)) eventQueries++;
    };
    ctx.db.knex.on("query", count);
    const res = await call("POST", `/items/${item!.id}/events/query`, {
      eventDateRange: { period: "Custom range", from: "1000-01-01T00:00:00Z", to: "9999-01-01T00:00:00Z", timeZone: "Europe/Brussels" },
      queryOptions: { aggregation: { metric: "sum", interval: "Monthly" } },
    });
    ctx.db.knex.off("query", count);
    const body = expectProblem(res, 400, "INVALID_REQUEST");
    expect(body.detail).to.equal("the range holds more than 100000 Monthly buckets; choose a longer interval or a shorter range");
    // The exact count: an enumeration stopping at the cap could not know it.
    expect(body.errors).to.deep.equal([{ path: "queryOptions.aggregation.interval", message: body.detail, buckets: 107_989 }]);
    expect(eventQueries).to.equal(0);
  });

  it("refuses a calculation of Hourly buckets over two thousand years with the same 400", async () => {
    const centuries = { period: "Custom range", from: "1000-01-01T00:00:00Z", to: "3000-01-01T00:00:00Z", timeZone: "UTC" };
    expect((await call("POST", "/calculation-definitions", chainDefinition("ages", 2, { eventDateRange: centuries }))).statusCode).to.equal(201);
    const body = expectProblem(await call("POST", "/calculation-definitions/ages/calculate", {}), 400, "INVALID_REQUEST");
    expect(body.detail).to.equal("the range holds more than 100000 Hourly buckets; choose a longer interval or a shorter range");
    // 2,000 Gregorian years are five 400-year cycles of 146,097 days.
    expect(body.errors![0]!.buckets).to.equal(5 * 146_097 * 24);
  });
});
