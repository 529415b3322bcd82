import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { seedSiteSeries, SITE_NET_BLOCK, SITE_RANGE } from "../support/site-series.js";
import { adminToken } from "../support/tokens.js";

const RANGE = SITE_RANGE;
const NET = { externalId: "net", calculationType: "EXPRESSION", data: { calculation: SITE_NET_BLOCK } };
type Answer = { buckets?: { timestamp: string; value: number | null }[]; value?: number | null; problems: { path?: string; message?: string }[] };

/** POST /calculation-definitions/test: an unsaved definition run as calculate runs a stored one, with its problems; nothing stored. */
describeEachBackend("POST /calculation-definitions/test", (ctx) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());
  beforeEach(() => seedSiteSeries(ctx.db.knex, ctx.tenant));

  const call = (method: "POST" | "GET" | "PUT", url: string, payload?: unknown) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });
  const test = async (body: unknown) => {
    const res = await call("POST", "/calculation-definitions/test", body);
    expect(res.statusCode, res.body).to.equal(200);
    return res.json() as Answer;
  };

  it("answers what calculate answers for the same definition once stored, and stores nothing", async () => {
    const unsaved = await test({ definition: NET });
    expect(unsaved).to.deep.equal({
      buckets: [
        { timestamp: "2024-01-01T10:15:00.000Z", value: 4 },
        { timestamp: "2024-01-01T10:30:00.000Z", value: 5 },
        { timestamp: "2024-01-01T10:45:00.000Z", value: -9 },
      ],
      problems: [],
    });
    expect((await call("GET", "/calculation-definitions/net")).statusCode).to.equal(404);
    expect((await call("POST", "/calculation-definitions", NET)).statusCode).to.equal(201);
    const stored = (await call("POST", "/calculation-definitions/net/calculate", {})).json() as Answer;
    expect(stored.buckets).to.deep.equal(unsaved.buckets);
  });

  it("runs the editor's text, not the stored definition: a changed expression is what is calculated", async () => {
    expect((await call("POST", "/calculation-definitions", NET)).statusCode).to.equal(201);
    const changed = { ...NET, data: { calculation: { ...NET.data.calculation, expression: "(a - b) * 2" } } };
    expect((await test({ definition: changed })).buckets!.map((b) => b.value)).to.deep.equal([8, 10, -18]);
    const unknown = await test({ definition: { ...NET, data: { calculation: { ...NET.data.calculation, expression: "(a - b) * g" } } } });
    expect(unknown.buckets).to.equal(undefined);
    expect(unknown.problems.map((p) => p.path)).to.deep.equal(["data.calculation.expression"]);
    expect(unknown.problems[0]!.message).to.match(/\bg\b/);
    // The stored one is unchanged.
    expect(((await call("POST", "/calculation-definitions/net/calculate", {})).json() as Answer).buckets!.map((b) => b.value)).to.deep.equal([4, 5, -9]);
  });

  it("takes inputs, eventDateRange and queryOptions as calculate does; externalId may be left out", async () => {
    const { externalId: _, ...anonymous } = NET;
    const answer = await test({ definition: anonymous, queryOptions: { aggregation: { metric: "sum", interval: "Hourly" } }, eventDateRange: { ...RANGE, to: "2024-01-01T13:00:00Z" } });
    // Hours 10, 11 and 12, the first and last removed.
    expect(answer.buckets!.map((b) => b.timestamp)).to.deep.equal(["2024-01-01T11:00:00.000Z"]);
    const value = await test({ definition: { externalId: "v", calculationType: "EXPRESSION", data: { calculation: { expression: "x * 3", expressionType: "VALUE", scope: { x: { type: "VALUE", value: 1 } } } } }, inputs: { x: { value: 7 } } });
    expect(value).to.deep.equal({ value: 21, problems: [] });
  });

  it("lists every problem of the definition, and a run's failure, as problems beside no result", async () => {
    const broken = await test({ definition: { externalId: "b", calculationType: "NOPE", data: { calculation: { expression: "a +", scope: { "1x": { type: "VALUE", value: 1 } } } } } });
    expect(broken.problems.length).to.be.at.least(2);
    expect(broken.problems.map((p) => p.path)).to.include("calculationType");
    expect(broken).to.not.have.any.keys("buckets", "value");
    // A nested stored definition that is inactive fails the run: reported, not thrown.
    expect((await call("POST", "/calculation-definitions", { ...NET, active: false })).statusCode).to.equal(201);
    const nested = await test({ definition: { externalId: "outer", calculationType: "EXPRESSION", data: { calculation: { expression: "n", queryOptions: SITE_NET_BLOCK.queryOptions, eventDateRange: RANGE, scope: { n: { type: "EXPRESSION", expression: "net" } } } } } });
    expect(nested.problems).to.have.length(1);
    expect(nested.problems[0]!.message).to.match(/not active/);
  });

  it("refuses a body of the wrong shape with 400 problem+json", async () => {
    for (const body of [{}, { definition: NET, extra: 1 }, { definition: "x" }, { definition: NET, eventDateRange: { period: "Someday" } }]) {
      const res = await call("POST", "/calculation-definitions/test", body);
      expect(res.statusCode, JSON.stringify(body)).to.equal(400);
      expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
    }
  });
});
