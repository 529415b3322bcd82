import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

describeEachBackend("graph data API", (ctx) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());

  const call = (method: "GET" | "POST" | "DELETE", url: string, payload?: object, tenant = ctx.tenant) =>
    server.app.inject({ method, url, payload, headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });

  it("upserts entities in bulk and keeps one row per (type, key), replacing attributes", async () => {
    const first = await call("POST", "/graph/entities", {
      entities: [
        { type: "Agreement", key: "AG-1", attributes: { publicId: "P-1", tags: ["a", "b"], amount: 12.5 } },
        { type: "Agreement", key: "AG-2", attributes: { publicId: "P-2" } },
      ],
    });
    expect(first.statusCode).to.equal(200);
    const [ag1] = (first.json() as { entities: { id: string }[] }).entities;
    const second = await call("POST", "/graph/entities", { entities: [{ type: "Agreement", key: "AG-1", attributes: { publicId: "P-1b" } }] });
    expect((second.json() as { entities: unknown[] }).entities).to.deep.equal([{ id: ag1?.id, type: "Agreement", key: "AG-1", publicId: "P-1b" }]);
    const page = (await call("GET", "/graph/entities?type=Agreement")).json() as { entities: { key: string; publicId: string }[]; total: number };
    expect(page.total).to.equal(2);
    expect(page.entities.map((e) => [e.key, e.publicId])).to.deep.equal([
      ["AG-1", "P-1b"],
      ["AG-2", "P-2"],
    ]);
  });

  it("keeps the given id and reads the entity back by it", async () => {
    const id = "0b7c4f4e-8a51-4c1e-9d0c-3f1e2d8f7a11";
    await call("POST", "/graph/entities", { entities: [{ id, type: "AccessPoint", key: "EAN-1", attributes: { accessPointType: "ELECTRICITY" } }] });
    const res = await call("GET", `/graph/entities/${id}`);
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({ id, type: "AccessPoint", key: "EAN-1", accessPointType: "ELECTRICITY" });
  });

  it("refuses nested objects and reserved attribute names, storing nothing", async () => {
    const res = await call("POST", "/graph/entities", {
      entities: [
        { type: "T", key: "ok" },
        { type: "T", key: "nested", attributes: { address: { city: "Gent" } } },
        { type: "T", key: "reserved", attributes: { id: "x" } },
      ],
    });
    expect(res.statusCode).to.equal(400);
    expect((res.json() as { errors: { path: string }[] }).errors.map((e) => e.path)).to.deep.equal([
      "entities[1].attributes",
      "entities[2].attributes",
    ]);
    expect(((await call("GET", "/graph/entities")).json() as { total: number }).total).to.equal(0);
  });

  it("accepts an Item's itemAction INGEST, STREAM or CALCULATE and nothing else", async () => {
    const ok = await call("POST", "/graph/entities", {
      entities: ["INGEST", "STREAM", "CALCULATE"].map((itemAction) => ({ type: "Item", key: itemAction, attributes: { itemAction } })),
    });
    expect(ok.statusCode).to.equal(200);
    const bad = await call("POST", "/graph/entities", { entities: [{ type: "Item", key: "x", attributes: { itemAction: "GUESS" } }] });
    expect(bad.statusCode).to.equal(400);
    expect((bad.json() as { errors: { path: string }[] }).errors[0]?.path).to.equal("entities[0].attributes.itemAction");
  });

  it("pages through entities by type and key", async () => {
    const entities = Array.from({ length: 5 }, (_, i) => ({ type: "P", key: `k${i}` }));
    await call("POST", "/graph/entities", { entities });
    const page = (await call("GET", "/graph/entities?type=P&limit=2&offset=2")).json() as { entities: { key: string }[]; total: number };
    expect(page.entities.map((e) => e.key)).to.deep.equal(["k2", "k3"]);
    expect(page.total).to.equal(5);
  });

  it("links entities named by type and key or by id, ignoring a link that exists", async () => {
    const stored = (await call("POST", "/graph/entities", {
      entities: [
        { type: "Agreement", key: "A" },
        { type: "Product", key: "B" },
      ],
    })).json() as { entities: { id: string }[] };
    const [a, b] = stored.entities;
    const links = { links: [{ from: { type: "Agreement", key: "A" }, relation: "hasProduct", to: { id: b?.id } }] };
    const res = await call("POST", "/graph/links", links);
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({
      links: [{ from: { id: a?.id, type: "Agreement", key: "A" }, relation: "hasProduct", to: { id: b?.id, type: "Product", key: "B" } }],
    });
    expect((await call("POST", "/graph/links", links)).statusCode).to.equal(200);
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from links where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(1);
  });

  it("refuses a link to a missing entity, naming it, and stores none of the request", async () => {
    await call("POST", "/graph/entities", { entities: [{ type: "A", key: "1" }, { type: "A", key: "2" }] });
    const res = await call("POST", "/graph/links", {
      links: [
        { from: { type: "A", key: "1" }, relation: "r", to: { type: "A", key: "2" } },
        { from: { type: "A", key: "1" }, relation: "r", to: { type: "A", key: "ghost" } },
      ],
    });
    expect(res.statusCode).to.equal(400);
    expect(res.json()).to.include({ code: "INVALID_REQUEST", detail: "links name entities that do not exist: A:ghost" });
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from links where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(0);
  });

  it("deletes an entity with its links", async () => {
    const stored = (await call("POST", "/graph/entities", { entities: [{ type: "A", key: "x" }, { type: "A", key: "y" }] })).json() as {
      entities: { id: string }[];
    };
    const [x, y] = stored.entities;
    await call("POST", "/graph/links", { links: [{ from: { id: x?.id }, relation: "r", to: { id: y?.id } }] });
    expect((await call("DELETE", `/graph/entities/${y?.id}`)).statusCode).to.equal(204);
    expect((await call("GET", `/graph/entities/${y?.id}`)).statusCode).to.equal(404);
    expect((await call("DELETE", `/graph/entities/${y?.id}`)).statusCode).to.equal(404);
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from links where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(0);
  });

  it("never shows, links or deletes another tenant's entities", async () => {
    const other = `${ctx.tenant}-other`;
    const theirs = ((await call("POST", "/graph/entities", { entities: [{ type: "A", key: "secret" }] }, other)).json() as {
      entities: { id: string }[];
    }).entities[0];
    await call("POST", "/graph/entities", { entities: [{ type: "A", key: "mine" }] });
    expect(((await call("GET", "/graph/entities")).json() as { total: number }).total).to.equal(1);
    expect((await call("GET", `/graph/entities/${theirs?.id}`)).statusCode).to.equal(404);
    expect((await call("DELETE", `/graph/entities/${theirs?.id}`)).statusCode).to.equal(404);
    const link = await call("POST", "/graph/links", { links: [{ from: { type: "A", key: "mine" }, relation: "r", to: { id: theirs?.id } }] });
    expect(link.statusCode).to.equal(400);
    expect((await call("GET", `/graph/entities/${theirs?.id}`, undefined, other)).statusCode).to.equal(200);
  });

  it("stores keys and attributes holding quotes, percent signs, SQL and unicode literally", async () => {
    const key = `O'Brien %_; drop table entities; -- ✓ 日本`;
    const res = await call("POST", "/graph/entities", { entities: [{ type: "Strange", key, attributes: { note: `"'\\` } }] });
    const id = (res.json() as { entities: { id: string }[] }).entities[0]?.id;
    expect((await call("GET", `/graph/entities/${id}`)).json()).to.deep.equal({ id, type: "Strange", key, note: `"'\\` });
  });

  it("GET /graph/schema summarises types with their attribute names and relations with the types they join", async () => {
    const entities = await call("POST", "/graph/entities", {
      entities: [
        { type: "Site", key: "S1", attributes: { name: "Gent", city: "Gent" } },
        { type: "Site", key: "S2", attributes: { name: "Brugge", zip: "8000" } },
        { type: "AccessPoint", key: "EAN-1", attributes: { accessPointType: "ELECTRICITY" } },
        { type: "AccessPoint", key: "EAN-2" },
        { type: "Empty", key: "E" },
      ],
    });
    expect(entities.statusCode).to.equal(200);
    const links = await call("POST", "/graph/links", {
      links: [
        { from: { type: "Site", key: "S1" }, relation: "hasAccessPoint", to: { type: "AccessPoint", key: "EAN-1" } },
        { from: { type: "Site", key: "S1" }, relation: "hasAccessPoint", to: { type: "AccessPoint", key: "EAN-2" } },
        { from: { type: "AccessPoint", key: "EAN-1" }, relation: "near", to: { type: "Site", key: "S2" } },
      ],
    });
    expect(links.statusCode).to.equal(200);
    const res = await call("GET", "/graph/schema");
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({
      types: [
        { type: "AccessPoint", count: 2, attributes: ["accessPointType"] },
        { type: "Empty", count: 1, attributes: [] },
        { type: "Site", count: 2, attributes: ["city", "name", "zip"] },
      ],
      relations: [
        { relation: "hasAccessPoint", from: "Site", to: "AccessPoint", count: 2 },
        { relation: "near", from: "AccessPoint", to: "Site", count: 1 },
      ],
      truncated: false,
    });
  });

  it("GET /graph/schema answers an empty summary for a tenant without a graph and never shows another tenant's", async () => {
    await call("POST", "/graph/entities", { entities: [{ type: "Secret", key: "k", attributes: { hidden: 1 } }] }, `${ctx.tenant}-other`);
    const res = await call("GET", "/graph/schema");
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({ types: [], relations: [], truncated: false });
  });

  it("GET /graph/schema refuses a request without a token", async () => {
    const res = await server.app.inject({ method: "GET", url: "/graph/schema", headers: { "x-tenant-id": ctx.tenant } });
    expect(res.statusCode).to.equal(401);
  });
});
