import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { executeQuery } from "../../src/graph/query/execute.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { graphStatistics, refreshGraphStatistics } from "../../src/graph/query/statistics.js";
import { describeEachBackend, randomTenant, type BackendContext } from "../support/backends.js";

const LIMITS = { timeoutMs: 10_000, maxRows: 1000 };

/** Three sites (two in C1), six devices at the first site owned by persons, one person in C5, a device linked to itself. */
async function seed(ctx: BackendContext, tenant: string): Promise<string[]> {
  const ids = Array.from({ length: 11 }, () => randomUUID());
  await upsertEntities(ctx.db.knex, tenant, [
    ...["C1", "C1", "C2"].map((city, i) => ({ id: ids[i]!, type: "Site", key: `S-${i}`, attributes: { city, tags: ["a", `t${i}`] } })),
    ...Array.from({ length: 6 }, (_, i) => ({ id: ids[3 + i]!, type: "Device", key: `D-${i}`, attributes: { owner: `P-${i % 2}` } })),
    { id: ids[9]!, type: "Person", key: "P-0", attributes: { name: "P-0", city: "C5" } },
    { id: ids[10]!, type: "Person", key: "P-1", attributes: { name: "P-1", city: "C6" } },
  ]);
  await createLinks(ctx.db.knex, tenant, [
    ...Array.from({ length: 6 }, (_, i) => ({ from: { id: ids[3 + i]! }, relation: "installedAt", to: { id: ids[0]! } })),
    { from: { id: ids[3]! }, relation: "peer", to: { id: ids[3]! } },
  ]);
  return ids;
}

describeEachBackend("graph statistics of a tenant", (ctx) => {
  it("counts the tenant's entities per type, links per relation and attribute values, and nothing of another tenant", async () => {
    await seed(ctx, ctx.tenant);
    const other = randomTenant();
    await upsertEntities(ctx.db.knex, other, [{ type: "Site", key: "elsewhere", attributes: { city: "C9" } }]);
    const statistics = await refreshGraphStatistics(ctx.db.graph, ctx.tenant);
    expect(statistics.types).to.deep.equal({ Site: 4, Device: 8, Person: 2 });
    expect(statistics.relations).to.deep.equal({
      installedAt: { links: 8, sources: 8, targets: 1, self: 0 },
      peer: { links: 1, sources: 1, targets: 1, self: 1 },
    });
    // The whole tenant was read: values it does not hold are held by none.
    expect(statistics.unsampledLinks).to.equal(0);
    expect(statistics.attributes.Site!.city).to.deep.equal({ held: 1, distinct: 2, common: { '"C1"': 0.5, '"C2"': 0.25 }, exact: true });
    expect(statistics.attributes.Site!.tags).to.include({ held: 1, distinct: 4, exact: true });
    expect(statistics.attributes.Site!.tags!.common['"a"']).to.equal(1);
    expect(statistics.attributes.Device!.owner).to.deep.equal({ held: 1, distinct: 2, common: { '"P-0"': 0.5, '"P-1"': 0.5 }, exact: true });
  });

  it("plans a query by the tenant's statistics once they are read, with the same answer as the plan by the pattern", async () => {
    await seed(ctx, ctx.tenant);
    const compiled = compileQuery(parseQuery(`Site ?s; entity:key "S-0". Device ?d; link:installedAt ?s; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C5".`));
    // The first query of a tenant is not kept waiting: its statistics are read meanwhile.
    expect(graphStatistics(ctx.db.graph, ctx.tenant)).to.equal(undefined);
    const before = await executeQuery(ctx.db.graph, compiled, ctx.tenant, {}, LIMITS);
    const statistics = await refreshGraphStatistics(ctx.db.graph, ctx.tenant);
    expect(graphStatistics(ctx.db.graph, ctx.tenant)).to.equal(statistics);
    expect(compiled.planned(statistics).sql).not.to.equal(compiled.sql);
    const after = await executeQuery(ctx.db.graph, compiled, ctx.tenant, {}, LIMITS);
    expect(after).to.deep.equal(before);
    expect(after.d!.map((d) => (d as { key: string }).key)).to.deep.equal(["D-0", "D-2", "D-4"]);
  });
});

describeEachBackend("the attribute index after a bulk write", (ctx) => {
  it("leaves at most 64 kB in its pending list, which every attribute lookup reads in full (migration 015)", async () => {
    // 3,000 entities of several attributes each: about 300 kB of index entries, under the default
    // limit of 4 MB all of it would wait in the pending list until a VACUUM.
    await upsertEntities(
      ctx.db.knex,
      ctx.tenant,
      Array.from({ length: 3000 }, (_, i) => ({ type: "Device", key: `D-${i}`, attributes: { owner: `P-${i}`, model: `M${i % 40}`, tags: [`t${i}`, `u${i % 7}`] } })),
    );
    const { rows } = (await ctx.db.knex.raw("select gin_clean_pending_list('entities_scoped_attributes'::regclass)::int as pages")) as { rows: { pages: number }[] };
    // Pages of 8 kB: a list that may grow to 64 kB before it is merged holds at most 8 (and a
    // concurrent VACUUM can only have emptied it).
    expect(rows[0]!.pages).to.be.at.most(8);
  });
});
