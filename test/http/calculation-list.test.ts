import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

/** GET /calculation-definitions pages like the other lists: limit 1–1000 (100 by default), offset, total. */
describeEachBackend("GET /calculation-definitions", (ctx) => {
  const suite = adminServer(ctx);
  const get = (url: string) => suite.server.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant } });

  async function create(externalId: string): Promise<void> {
    const res = await suite.server.app.inject({
      method: "POST",
      url: "/calculation-definitions",
      headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant },
      payload: { externalId, calculationType: "EXPRESSION", data: { calculation: { expression: "2 * 3" } } },
    });
    expect(res.statusCode, res.body).to.equal(201);
  }

  it("answers pages ordered by externalId with total, limit and offset", async () => {
    const ids = ["c-05", "c-01", "c-04", "c-02", "c-03"];
    for (const id of ids) await create(id);
    const all = await get("/calculation-definitions");
    expect(all.statusCode, all.body).to.equal(200);
    const page = all.json() as { calculationDefinitions: { externalId: string }[]; total: number; limit: number; offset: number };
    expect(page).to.include({ total: 5, limit: 100, offset: 0 });
    expect(page.calculationDefinitions.map((d) => d.externalId)).to.deep.equal(["c-01", "c-02", "c-03", "c-04", "c-05"]);

    const second = (await get("/calculation-definitions?limit=2&offset=2")).json() as typeof page;
    expect(second).to.include({ total: 5, limit: 2, offset: 2 });
    expect(second.calculationDefinitions.map((d) => d.externalId)).to.deep.equal(["c-03", "c-04"]);
    const past = (await get("/calculation-definitions?limit=2&offset=9")).json() as typeof page;
    expect(past).to.deep.include({ total: 5, calculationDefinitions: [] });
  });

  it("refuses a limit or offset out of bounds, or an unknown parameter, as the other lists do", async () => {
    for (const query of ["limit=0", "limit=1001", "offset=-1", "limit=x", "page=2"]) {
      const [mine, entities] = await Promise.all([get(`/calculation-definitions?${query}`), get(`/graph/entities?${query}`)]);
      expect(mine.statusCode, `${query}: ${mine.body}`).to.equal(400);
      expect(mine.headers["content-type"]).to.match(/^application\/problem\+json/);
      expect(mine.json()).to.include({ code: "INVALID_REQUEST" });
      expect(entities.statusCode, query).to.equal(mine.statusCode);
    }
    const max = await get("/calculation-definitions?limit=1000");
    expect(max.statusCode).to.equal(200);
    expect(max.json()).to.include({ total: 0, limit: 1000, offset: 0 });
  });
});
