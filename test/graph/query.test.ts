import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { EXAMPLE_QUERY, exampleGraph, type ExampleAgreement } from "../../src/demo/seed.js";
import { ProblemError } from "../../src/errors.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { executeGuardedQuery, executeQuery, type DefinitionGuard, type QueryLimits, type QueryOutput } from "../../src/graph/query/execute.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { describeEachBackend, type BackendContext } from "../support/backends.js";

const LIMITS = { timeoutMs: 5000, maxRows: 1000 };

async function seed(ctx: BackendContext, tenant: string, agreements: ExampleAgreement[]) {
  const { entities, links } = exampleGraph(tenant, agreements);
  await upsertEntities(ctx.db.knex, tenant, entities);
  await createLinks(ctx.db.knex, tenant, links);
}

function run(ctx: BackendContext, source: string, params: Record<string, unknown> = {}, tenant = ctx.tenant, limits: QueryLimits = LIMITS): Promise<QueryOutput> {
  return executeQuery(ctx.db.graph, compileQuery(parseQuery(source)), tenant, params, limits);
}

async function failure(promise: Promise<unknown>): Promise<ProblemError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(ProblemError);
    return err as ProblemError;
  }
  expect.fail("no error");
}

const keys = (entities: unknown[] | undefined) => (entities ?? []).map((e) => (e as { key: string }).key);

/** 400 rows of one type that all hold the same value: `CROWD_TRIPLES` joins every triple of them. */
const crowd = (ctx: BackendContext) =>
  upsertEntities(ctx.db.knex, ctx.tenant, Array.from({ length: 400 }, (_, i) => ({ type: "Row", key: `r${i}`, attributes: { n: i, g: "same" } })));
/** One connected part, 64,000,000 match rows: past any work or time limit of these tests when walked. */
const CROWD_TRIPLES = `Row ?a; attribute:g ?x. Row ?b; attribute:g ?x. Row ?c; attribute:g ?x.`;

describeEachBackend("graph queries", (ctx) => {
  const agreementsA: ExampleAgreement[] = [
    { publicId: "AGR-1", accessPoints: [["EAN-11", "ELECTRICITY"], ["EAN-12", "GAS"], ["EAN-13", "WATER"]] },
    { publicId: "AGR-2", accessPoints: [["EAN-21", "ELECTRICITY"]] },
    { publicId: "AGR-3", accessPoints: [] },
  ];
  // The other tenant holds the same agreement ids with other access points.
  const agreementsB: ExampleAgreement[] = [{ publicId: "AGR-1", accessPoints: [["EAN-B1", "GAS"]] }];

  it("walks the specification's example to exactly the agreement's access points", async () => {
    await seed(ctx, ctx.tenant, agreementsA);
    await seed(ctx, `${ctx.tenant}-b`, agreementsB);
    const output = await run(ctx, EXAMPLE_QUERY, { tenantId: ctx.tenant, publicId: "AGR-1" });
    expect(Object.keys(output)).to.deep.equal(["tenant", "indexSet", "agreement", "product", "arrangement", "relation", "accessPoint"]);
    expect(keys(output.accessPoint)).to.deep.equal(["EAN-11", "EAN-12", "EAN-13"]);
    expect(output.accessPoint?.[1]).to.deep.include({ type: "AccessPoint", key: "EAN-12", externalId: "EAN-12", publicId: "AP-N-12", accessPointType: "GAS" });
    expect(keys(output.agreement)).to.deep.equal(["AGR-1"]);
    expect(keys(output.product)).to.deep.equal(["AGR-1-P"]);
    expect(keys(output.relation)).to.deep.equal(["AGR-1-EAN-11", "AGR-1-EAN-12", "AGR-1-EAN-13"]);
    expect(keys(output.tenant)).to.deep.equal([ctx.tenant]);

    const other = await run(ctx, EXAMPLE_QUERY, { tenantId: `${ctx.tenant}-b`, publicId: "AGR-1" }, `${ctx.tenant}-b`);
    expect(keys(other.accessPoint)).to.deep.equal(["EAN-B1"]);
  });

  it("never mixes tenants: the tenant parameter of another tenant finds nothing", async () => {
    await seed(ctx, ctx.tenant, agreementsA);
    await seed(ctx, `${ctx.tenant}-b`, agreementsB);
    const output = await run(ctx, EXAMPLE_QUERY, { tenantId: `${ctx.tenant}-b`, publicId: "AGR-1" });
    expect(Object.values(output).every((list) => list.length === 0)).to.equal(true);
  });

  it("answers no match with an empty array for every label", async () => {
    await seed(ctx, ctx.tenant, agreementsA);
    const none = await run(ctx, EXAMPLE_QUERY, { tenantId: ctx.tenant, publicId: "AGR-404" });
    expect(none).to.deep.equal({ tenant: [], indexSet: [], agreement: [], product: [], arrangement: [], relation: [], accessPoint: [] });
    const agreementWithoutPoints = await run(ctx, EXAMPLE_QUERY, { tenantId: ctx.tenant, publicId: "AGR-3" });
    expect(agreementWithoutPoints.agreement).to.deep.equal([]);
  });

  it("returns the distinct entities of each label in the order of the match rows", async () => {
    await seed(ctx, ctx.tenant, agreementsA);
    const output = await run(
      ctx,
      `Agreement ?a; link:hasProduct AgreementProduct:?p.
       AgreementProduct ?p; link:hasArrangement Arrangement:?r.
       Arrangement ?r; link:hasAccessPointRelation AccessPointRelation:?rel.
       AccessPointRelation ?rel; link:accessPoint AccessPoint:?ap.`,
    );
    expect(keys(output.a)).to.deep.equal(["AGR-1", "AGR-2"]);
    expect(keys(output.ap)).to.deep.equal(["EAN-11", "EAN-12", "EAN-13", "EAN-21"]);
  });

  it("follows a link backwards to a label bound in another statement", async () => {
    await seed(ctx, ctx.tenant, agreementsA);
    const output = await run(ctx, `AccessPoint ?ap; entity:key "EAN-21". AccessPointRelation ?rel; link:accessPoint ?ap. Arrangement ?r; link:hasAccessPointRelation ?rel.`);
    expect(keys(output.r)).to.deep.equal(["AGR-2-ARR"]);
  });

  it("matches attributes by equality, by array membership, by number and by boolean", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Meter", key: "m1", attributes: { tags: ["smart", "indoor"], phases: 3, active: true } },
      { type: "Meter", key: "m2", attributes: { tags: "smart", phases: 1, active: false } },
      { type: "Meter", key: "m3", attributes: { tags: ["dumb"], phases: "3", active: true } },
    ]);
    expect(keys((await run(ctx, `Meter ?m; attribute:tags "smart".`)).m)).to.deep.equal(["m1", "m2"]);
    expect(keys((await run(ctx, `Meter ?m; attribute:phases 3.`)).m)).to.deep.equal(["m1"]);
    expect(keys((await run(ctx, `Meter ?m; attribute:phases "3".`)).m)).to.deep.equal(["m3"]);
    expect(keys((await run(ctx, `Meter ?m; attribute:active true; attribute:tags "smart".`)).m)).to.deep.equal(["m1"]);
    expect(keys((await run(ctx, `Meter ?m; attribute:active \${on}.`, { on: false })).m)).to.deep.equal(["m2"]);
  });

  it("joins on value labels and on an entity label used as a value", async () => {
    const [owner] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Person", key: "p1", attributes: { region: "north" } }]);
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Site", key: "s1", attributes: { region: "north", ownerId: owner!.id } },
      { type: "Site", key: "s2", attributes: { region: "south", ownerId: "someone-else" } },
      { type: "Site", key: "s3", attributes: { region: "north" } },
    ]);
    const byValue = await run(ctx, `Person ?p; attribute:region ?region. Site ?s; attribute:region ?region.`);
    expect(keys(byValue.s)).to.deep.equal(["s1", "s3"]);
    expect(byValue.region).to.deep.equal(["north"]);
    const byOwner = await run(ctx, `Person ?p; entity:key "p1". Site ?s; attribute:ownerId ?p.`);
    expect(keys(byOwner.s)).to.deep.equal(["s1"]);
  });

  it("binds a value variable used once only where the attribute exists (a null is no value)", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Site", key: "S1", attributes: { city: "Gent" } },
      { type: "Site", key: "S2" },
      { type: "Site", key: "S3", attributes: { city: null } },
    ]);
    expect(await run(ctx, `Site ?s; attribute:city ?c.`).then((o) => ({ s: keys(o.s), c: o.c }))).to.deep.equal({ s: ["S1"], c: ["Gent"] });
  });

  it("matches an entity label used as a value against an array attribute holding its id, as a constant does", async () => {
    const [meter, other] = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Meter", key: "M1" },
      { type: "Meter", key: "M2" },
    ]);
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Site", key: "S1", attributes: { members: [meter!.id] } },
      { type: "Site", key: "S2", attributes: { members: other!.id } },
      { type: "Site", key: "S3", attributes: { members: ["nobody"] } },
    ]);
    const output = await run(ctx, `Site ?s; attribute:members ?m. Meter ?m.`);
    expect({ s: keys(output.s), m: keys(output.m) }).to.deep.equal({ s: ["S1", "S2"], m: ["M1", "M2"] });
    expect(keys((await run(ctx, `Site ?s; attribute:members \${id}.`, { id: meter!.id })).s)).to.deep.equal(["S1"]);
  });

  it("ranges a value variable over the elements of an array attribute, and joins on them", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Site", key: "S1", attributes: { tags: ["a", "b", null] } },
      { type: "Site", key: "S2", attributes: { tags: "b" } },
      { type: "Site", key: "S3", attributes: { tags: [] } },
      { type: "Tag", key: "T1", attributes: { name: "b" } },
    ]);
    const all = await run(ctx, `Site ?s; attribute:tags ?t.`);
    expect(keys(all.s)).to.deep.equal(["S1", "S2"]);
    expect([...(all.t as string[])].sort()).to.deep.equal(["a", "b"]);
    const joined = await run(ctx, `Site ?s; attribute:tags ?t. Tag ?g; attribute:name ?t.`);
    expect({ s: keys(joined.s), t: joined.t, g: keys(joined.g) }).to.deep.equal({ s: ["S1", "S2"], t: ["b"], g: ["T1"] });
    const byKey = await run(ctx, `Site ?s; attribute:tags ?t. Tag ?g; entity:key "T1"; attribute:name ?t.`);
    expect(byKey.t).to.deep.equal(["b"]);
  });

  it("matches parameters holding quotes, %, SQL and unicode literally", async () => {
    const strange = [`O'Brien`, `100%`, `'; drop table entities; --`, `日本 ✓ "q"`, `a_b`];
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      ...strange.map((key) => ({ type: "Odd", key, attributes: { label: key } })),
      { type: "Odd", key: "100", attributes: { label: "100" } },
      { type: "Odd", key: "axb", attributes: { label: "axb" } },
    ]);
    for (const value of strange) {
      expect(keys((await run(ctx, `Odd ?o; entity:key \${v}.`, { v: value })).o)).to.deep.equal([value]);
      expect(keys((await run(ctx, `Odd ?o; attribute:label \${v}.`, { v: value })).o)).to.deep.equal([value]);
    }
    expect(keys((await run(ctx, `Odd ?o; entity:key "EAN-\${v}".`, { v: "x" })).o)).to.deep.equal([]);
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from entities where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(7);
  });

  it("builds a string from a template of parameters", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "AccessPoint", key: "EAN-541-x" }]);
    expect(keys((await run(ctx, `AccessPoint ?ap; entity:key "EAN-\${a}-\${b}".`, { a: 541, b: "x" })).ap)).to.deep.equal(["EAN-541-x"]);
  });

  it("refuses a missing parameter or one that is not a scalar", async () => {
    const missing = await failure(run(ctx, EXAMPLE_QUERY, { tenantId: ctx.tenant }));
    expect(missing.code).to.equal("INVALID_QUERY_PARAMETERS");
    expect(missing.message).to.contain("${publicId}");
    const object = await failure(run(ctx, EXAMPLE_QUERY, { tenantId: ctx.tenant, publicId: { $ne: 1 } }));
    expect(object.code).to.equal("INVALID_QUERY_PARAMETERS");
  });

  it("stops a query that matches more rows than allowed with a clear error", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, Array.from({ length: 30 }, (_, i) => ({ type: "Row", key: `r${i}` })));
    const error = await failure(run(ctx, `Row ?a. Row ?b.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 500 }));
    expect(error.status).to.equal(422);
    expect(error.message).to.equal("the graph query matched more than 500 rows (QUERY_MAX_ROWS); narrow it down");
    expect(keys((await run(ctx, `Row ?a. Row ?b.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 900 })).a)).to.have.length(30);
  });

  // Independent parts (issue 30): each walked once, their product never built. Walked again for
  // every row of the part before it, these passed the work limit (embedded) or ran for seconds.
  it("walks each independent part of a pattern once: an empty part empties the answer at once", async () => {
    await crowd(ctx);
    // 160,000 pairs, then a part with no row; a part walked for every row before it: 64,000,000 visits.
    const output = await run(ctx, `Row ?a. Row ?b. Row ?c; attribute:missing ?x.`, {}, ctx.tenant, { timeoutMs: 1000, maxRows: 1000 });
    expect(output).to.deep.equal({ a: [], b: [], c: [], x: [] });
  });

  it("answers a pattern of independent parts whose answer fits, whatever their walks would cost repeated (the issue's example)", async () => {
    const meters = await upsertEntities(ctx.db.knex, ctx.tenant, Array.from({ length: 300 }, (_, i) => ({ type: "Meter", key: `m${String(i).padStart(3, "0")}` })));
    const owner = meters[0]!;
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Meter", key: "m001", attributes: { ownerId: owner.id } },
      { type: "Meter", key: "m002", attributes: { ownerId: [owner.id, "elsewhere"] } },
    ]);
    // 300 × 2 = 600 rows within 1,000; the work limit is 50,000 rows visited (50 × 1,000).
    const output = await run(ctx, `Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 1000 });
    expect(keys(output.m2)).to.deep.equal(meters.map((m) => m.key));
    expect(keys(output.m5)).to.deep.equal(["m000"]);
    expect(keys(output.m3)).to.deep.equal(["m001", "m002"]);
    // What is counted is the parts' own work, about a visit per meter in each: 1,500 visits suffice.
    const counted = await run(ctx, `Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 1000, maxVisits: 1500 });
    expect(counted).to.deep.equal(output);
  });

  it("answers the row limit from the parts' counts, before any product row is built", async () => {
    await crowd(ctx);
    // 400 × 400 × 400 rows: building 1,001 of them would pass this work limit; counting the parts
    // does not, nor walking them: 400 rows of ?a, then ?b only to its 3rd row (1,200 > 1,000).
    const error = await failure(run(ctx, `Row ?a. Row ?b. Row ?c.`, {}, ctx.tenant, { timeoutMs: 1000, maxRows: 1000, maxVisits: 410 }));
    expect(error.message).to.equal("the graph query matched more than 1000 rows (QUERY_MAX_ROWS); narrow it down");
    // Parts past the limit together, and a last one with no row: an empty answer, no error.
    const limits = { timeoutMs: 1000, maxRows: 400, maxVisits: 2000 };
    expect(await run(ctx, `Row ?a. Row ?b. Zone ?z.`, {}, ctx.tenant, limits)).to.deep.equal({ a: [], b: [], z: [] });
    // A product of exactly the limit (1 × 400 rows) is an answer; one row fewer allowed, it is not.
    const fits = await run(ctx, `Row ?a; attribute:n 7. Row ?c.`, {}, ctx.tenant, limits);
    expect(keys(fits.a)).to.deep.equal(["r7"]);
    expect(keys(fits.c)).to.have.length(400);
    const over = await failure(run(ctx, `Row ?a; attribute:n 7. Row ?c.`, {}, ctx.tenant, { ...limits, maxRows: 399 }));
    expect(over.message).to.equal("the graph query matched more than 399 rows (QUERY_MAX_ROWS); narrow it down");
  });

  // The embedded database cannot interrupt a statement: there the walk counts what it visits.
  if (ctx.name === "embedded") it("stops a query that visits more rows than its work limit, however few rows it matches", async () => {
    await crowd(ctx);
    // 64,000,000 triples would be visited, none matches: the row limit alone would not stop it.
    const triples = `${CROWD_TRIPLES} Row ?c; attribute:missing ?y.`;
    const error = await failure(run(ctx, triples, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 10, maxVisits: 20_000 }));
    expect(error.status).to.equal(422);
    expect(error.message).to.equal(
      "the graph query visited more than 20000 rows of the graph (its work limit on the embedded database) and was stopped; narrow it down",
    );
    expect((await run(ctx, `Row ?a; attribute:missing ?x.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 10, maxVisits: 20_000 })).a).to.deep.equal([]);
    expect(keys((await run(ctx, `Row ?a; attribute:n 7.`, {}, ctx.tenant, { timeoutMs: 5000, maxRows: 10, maxVisits: 20_000 })).a)).to.deep.equal(["r7"]);
  });

  // PGlite runs a statement on the main thread in WebAssembly and cannot interrupt it, so the
  // time limit is PostgreSQL's statement_timeout and holds on the real database only (docs/reference/query-language.md).
  if (ctx.name === "postgres") it("stops a query that runs past the time limit with a clear error", async () => {
    await crowd(ctx);
    const error = await failure(run(ctx, CROWD_TRIPLES, {}, ctx.tenant, { timeoutMs: 200, maxRows: 5_000_000 }));
    expect(error.status).to.equal(422);
    expect(error.code).to.equal("TRANSFORM_FAILED");
    expect(error.message).to.match(/longer than 200 ms/);
  });

  it("runs no walk once the definition guarding it has changed: no answer, and none of the walk's limits reached", async () => {
    await crowd(ctx);
    const guard: DefinitionGuard = { table: "api_definitions", externalId: "rows", id: randomUUID(), updatedAt: "2026-01-02T03:04:05.678Z" };
    await ctx.db.knex("api_definitions").insert({ tenant: ctx.tenant, id: guard.id, external_id: guard.externalId, query: "-", updated_at: guard.updatedAt });
    // Past the work limit (embedded) or the time limit (PostgreSQL) if walked.
    const compiled = compileQuery(parseQuery(CROWD_TRIPLES));
    const limits: QueryLimits = { timeoutMs: 200, maxRows: 100_000_000, maxVisits: 20_000 };
    const error = await failure(executeGuardedQuery(ctx.db.graph, compiled, ctx.tenant, {}, limits, guard));
    expect(error.message).to.match(ctx.name === "embedded" ? /visited more than 20000 rows/ : /longer than 200 ms/);
    const stale = { ...guard, updatedAt: "2026-01-02T03:04:05.679Z" };
    expect(await executeGuardedQuery(ctx.db.graph, compiled, ctx.tenant, {}, limits, stale)).to.equal(undefined);
    await ctx.db.knex("api_definitions").where({ tenant: ctx.tenant, id: guard.id }).update({ active: false });
    expect(await executeGuardedQuery(ctx.db.graph, compiled, ctx.tenant, {}, limits, guard)).to.equal(undefined);
  });
});
