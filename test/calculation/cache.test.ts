import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { ProblemError } from "../../src/errors.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { createServices, type Services } from "../../src/services.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { describeEachBackend } from "../support/backends.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";

const RANGE = { period: "Custom range" as const, from: "2024-01-01T10:00:00Z", to: "2024-01-01T11:15:00Z", timeZone: "UTC" };
const QUARTERS = { aggregation: { metric: "sum" as const, interval: "15 minute" as const } };
const SELECT = 'Site ?site; entity:key "S1"; link:consumption Item:?cons.';

describeEachBackend("compiled calculation definitions", (ctx) => {
  let services: Services;
  beforeEach(async () => {
    services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), ctx.db);
    const [, cons] = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Site", key: "S1" },
      { type: "Item", key: "cons" },
    ]);
    await createLinks(ctx.db.knex, ctx.tenant, [{ from: { type: "Site", key: "S1" }, relation: "consumption", to: { id: cons!.id } }]);
    const at = (hm: string) => `2024-01-01T${hm}:00Z`;
    await ingestEvents(
      ctx.db.knex,
      ctx.tenant,
      [["10:00", 1], ["10:05", 2], ["10:20", 5], ["10:40", 7], ["10:50", 1], ["11:00", 4]].map(([t, v]) => ({ itemId: cons!.id, timestamp: at(t as string), value: v as number })),
    );
  });
  afterEach(() => services.transforms.close());

  const level1 = (expression: string) => ({
    externalId: "level1",
    calculationType: "EXPRESSION" as const,
    data: { calculation: { select: SELECT, expression, eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { timeseries: { selectVariable: "{{?cons}}" } } } } },
  });
  const level2 = {
    externalId: "level2",
    calculationType: "EXPRESSION" as const,
    data: { calculation: { expression: "x * 2", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { x: { type: "EXPRESSION" as const, expression: "level1" } } } },
  };
  const values = async (externalId: string) => {
    const result = await services.calculations.calculate(ctx.tenant, externalId, {});
    return "buckets" in result ? result.buckets.map((b) => b.value) : result.value;
  };

  it("compiles each definition once, nested ones included, and sees an update of a nested one at once", async () => {
    await services.calculations.create(ctx.tenant, level1("a"));
    await services.calculations.create(ctx.tenant, level2);
    const before = services.calculations.compilations;
    expect(await values("level2")).to.deep.equal([6, 10, 14, 2, 8]);
    expect(services.calculations.compilations - before, "both levels compiled on the first run").to.equal(2);
    expect(await values("level2")).to.deep.equal([6, 10, 14, 2, 8]);
    expect(await values("level1")).to.deep.equal([3, 5, 7, 1, 4]);
    expect(services.calculations.compilations - before, "later runs reuse them").to.equal(2);

    await services.calculations.replace(ctx.tenant, "level1", level1("a + 100"));
    expect(await values("level2")).to.deep.equal([206, 210, 214, 202, 208]);
    // level1 changed, and level2's check reads level1: both compiled again, once.
    expect(services.calculations.compilations - before).to.equal(4);
    expect(await values("level2")).to.deep.equal([206, 210, 214, 202, 208]);
    expect(services.calculations.compilations - before).to.equal(4);
  });

  it("refuses a run once a nested definition is gone, as the check of the stored definition says", async () => {
    await services.calculations.create(ctx.tenant, level1("a"));
    await services.calculations.create(ctx.tenant, level2);
    expect(await values("level2")).to.deep.equal([6, 10, 14, 2, 8]);
    await services.calculations.delete(ctx.tenant, "level1");
    const err = await services.calculations.calculate(ctx.tenant, "level2", {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(ProblemError);
    expect(err).to.include({ code: "INVALID_DEFINITION", message: 'stored calculation definition "level2" is not valid: there is no calculation definition "level1" in this tenant' });
  });

  it("reads a stored reference cycle to its end, and refuses it, naming it", async () => {
    await services.calculations.create(ctx.tenant, level1("a"));
    await services.calculations.create(ctx.tenant, level2);
    // A cycle the checks on save refuse, written past them.
    const cyclic = { calculation: { expression: "z", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { z: { type: "EXPRESSION", expression: "level2" } } } };
    await ctx.db.knex("calculation_definitions").where({ tenant: ctx.tenant, external_id: "level1" }).update({ data: JSON.stringify(cyclic), updated_at: ctx.db.knex.fn.now() });
    const err = await services.calculations.calculate(ctx.tenant, "level2", {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.include({ code: "INVALID_DEFINITION" });
    expect((err as ProblemError).errors?.map((e) => e.message)).to.include("reference cycle: level2 → level1 → level2");
  });
});
