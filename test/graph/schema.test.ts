import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

describeEachBackend("GET /graph/schema", (ctx) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());

  const call = (method: "GET" | "POST", url: string, payload?: object, tenant = ctx.tenant) =>
    server.app.inject({ method, url, payload, headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });

  it("summarises types with their attribute names and relations with the types they join", async () => {
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

  it("answers an empty summary for a tenant without a graph and never shows another tenant's", async () => {
    await call("POST", "/graph/entities", { entities: [{ type: "Secret", key: "k", attributes: { hidden: 1 } }] }, `${ctx.tenant}-other`);
    const res = await call("GET", "/graph/schema");
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({ types: [], relations: [], truncated: false });
  });

  it("refuses a request without a token", async () => {
    const res = await server.app.inject({ method: "GET", url: "/graph/schema", headers: { "x-tenant-id": ctx.tenant } });
    expect(res.statusCode).to.equal(401);
  });
});
