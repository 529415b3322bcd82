import { expect } from "chai";
import { EXAMPLE_DEFINITION, exampleGraph } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

/**
 * Two service instances on one database, as two replicas: each keeps the definitions it ran, and a
 * change made through one must be what the other's very next request answers with.
 */
describeEachBackend("API definitions seen at once by every replica", (ctx) => {
  let writer: TestServer;
  let reader: TestServer;
  let admin: string;
  before(async () => {
    writer = await testServer(ctx.db);
    reader = await testServer(ctx.db);
    admin = await adminToken();
  });
  after(async () => {
    await writer.app.close();
    await reader.app.close();
  });

  const call = (server: TestServer, method: "POST" | "PUT" | "PATCH" | "DELETE", url: string, payload?: unknown) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${admin}`, "x-tenant-id": ctx.tenant } });
  const ask = (externalId = EXAMPLE_DEFINITION.externalId, publicId = "AGR-1") =>
    call(reader, "POST", "/task-backend/tasks/energy/api/request", { apiDefinitionExternalId: externalId, queryParameters: { publicId } });

  beforeEach(async () => {
    const { entities, links } = exampleGraph(ctx.tenant, [{ publicId: "AGR-1", accessPoints: [["EAN-11", "ELECTRICITY"], ["EAN-12", "GAS"]] }]);
    await upsertEntities(ctx.db.knex, ctx.tenant, entities);
    await createLinks(ctx.db.knex, ctx.tenant, links);
    expect((await call(writer, "POST", "/api-definitions", EXAMPLE_DEFINITION)).statusCode).to.equal(201);
    // The reader runs it twice: the second run is answered from what it kept, through the guard.
    for (let i = 0; i < 2; i++) {
      const res = await ask();
      expect(res.statusCode, res.body).to.equal(200);
      expect((res.json() as { accessPoints: unknown[] }).accessPoints).to.have.length(2);
    }
  });

  it("answers 409 at once after another replica deactivated the definition, and 200 again once it is reactivated", async () => {
    expect((await call(writer, "PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: false })).statusCode).to.equal(200);
    const refused = await ask();
    expect(refused.statusCode, refused.body).to.equal(409);
    expect(refused.json()).to.include({ code: "API_DEFINITION_INACTIVE" });
    expect((await call(writer, "PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: true })).statusCode).to.equal(200);
    expect((await ask()).statusCode).to.equal(200);
  });

  it("answers with the new transform and parameters at once after another replica replaced the definition", async () => {
    const replaced = await call(writer, "PUT", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, {
      ...EXAMPLE_DEFINITION,
      transform: `{ "count": $count(result(?accessPoint) { id }), "asked": \${publicId} }`,
    });
    expect(replaced.statusCode, replaced.body).to.equal(200);
    const res = await ask();
    expect(res.statusCode, res.body).to.equal(200);
    expect(res.json()).to.deep.equal({ count: 2, asked: "AGR-1" });
    // A parameter the new version declares is accepted at once, though the old version refused it.
    const withExtra = await call(writer, "PUT", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, {
      ...EXAMPLE_DEFINITION,
      data: { queryParameters: [...EXAMPLE_DEFINITION.data!.queryParameters!, { name: "note" }] },
      transform: `{ "note": \${note} }`,
    });
    expect(withExtra.statusCode, withExtra.body).to.equal(200);
    const noted = await call(reader, "POST", "/task-backend/tasks/energy/api/request", {
      apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId,
      queryParameters: { publicId: "AGR-1", note: "n" },
    });
    expect(noted.statusCode, noted.body).to.equal(200);
    expect(noted.json()).to.deep.equal({ note: "n" });
  });

  it("answers 404 at once after another replica deleted or renamed the definition, and serves a new one of the same externalId", async () => {
    const renamed = await call(writer, "PUT", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { ...EXAMPLE_DEFINITION, externalId: "renamed" });
    expect(renamed.statusCode, renamed.body).to.equal(200);
    expect((await ask()).statusCode).to.equal(404);
    expect((await ask("renamed")).statusCode).to.equal(200);
    expect((await call(writer, "DELETE", "/api-definitions/renamed")).statusCode).to.equal(204);
    expect((await ask("renamed")).statusCode).to.equal(404);
    const again = await call(writer, "POST", "/api-definitions", { ...EXAMPLE_DEFINITION, transform: `{ "again": true }` });
    expect(again.statusCode, again.body).to.equal(201);
    const res = await ask();
    expect(res.statusCode, res.body).to.equal(200);
    expect(res.json()).to.deep.equal({ again: true });
  });

  it("answers an empty match through the guard as without it", async () => {
    const res = await ask(EXAMPLE_DEFINITION.externalId, "AGR-404");
    expect(res.statusCode, res.body).to.equal(200);
    expect(res.json()).to.deep.equal({ accessPoints: [] });
  });
});
