import { expect } from "chai";
import knexFactory from "knex";
import { openDatabase, type Database } from "../../src/db/database.js";
import { postgresNotifications } from "../../src/db/notifications.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, status: number, code: string) {
  expect(res.statusCode, JSON.stringify(res.json())).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).to.include({ status, code });
  expect(body.type).to.be.a("string");
  expect(body.title).to.be.a("string");
  expect(body.detail).to.be.a("string");
  return body;
}

describeEachBackend("REST skeleton", (ctx) => {
  let server: TestServer;
  before(async () => {
    server = await testServer(ctx.db, { BODY_LIMIT_BYTES: "2048" });
  });
  after(() => server.app.close());

  it("answers /health with the database checked", async () => {
    const res = await server.app.inject({ method: "GET", url: "/health" });
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({ status: "ok", database: { kind: ctx.name, status: "ok" } });
  });

  it("serves the console's page and assets with Referrer-Policy: no-referrer beside its CSP", async () => {
    const page = await server.app.inject({ method: "GET", url: "/console" });
    expect(page.statusCode).to.equal(200);
    expect(page.headers["referrer-policy"]).to.equal("no-referrer");
    expect(page.headers["content-security-policy"]).to.include("default-src 'self'");
    const asset = /src="\/console\/([^"]+\.js)"/.exec(page.body)?.[1];
    expect(asset, page.body).to.be.a("string");
    const script = await server.app.inject({ method: "GET", url: `/console/${asset!}` });
    expect(script.statusCode).to.equal(200);
    expect(script.headers["referrer-policy"]).to.equal("no-referrer");
  });

  it("serves its OpenAPI description with the protected routes marked", async () => {
    const res = await server.app.inject({ method: "GET", url: "/openapi.json" });
    expect(res.statusCode).to.equal(200);
    const doc = res.json() as { openapi: string; paths: Record<string, Record<string, { security?: unknown; parameters?: { name: string; in: string }[] }>> };
    expect(doc.openapi).to.equal("3.1.0");
    expect(doc.paths).to.include.keys("/health", "/graph/entities", "/graph/links", "/graph/entities/{id}", "/api-definitions", "/api-definitions/{externalId}", "/api-definitions/test", "/task-backend/tasks/{segment}/api/request");
    const upsert = doc.paths["/graph/entities"]?.post;
    expect(upsert?.security).to.deep.equal([{ bearerAuth: [] }]);
    expect(upsert?.parameters?.some((p) => p.in === "header" && p.name === "x-tenant-id")).to.equal(true);
    expect(doc.paths["/health"]?.get?.security).to.equal(undefined);
  });

  it("answers an unknown route with 404 problem+json", async () => {
    const res = await server.app.inject({ method: "GET", url: "/no/such/route?x=1" });
    const body = expectProblem(res, 404, "INVALID_REQUEST");
    expect(body.detail).to.equal("there is no route GET /no/such/route");
  });

  it("answers malformed JSON with 400 INVALID_REQUEST", async () => {
    const res = await server.app.inject({
      method: "POST",
      url: "/graph/entities",
      headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": ctx.tenant, "content-type": "application/json" },
      payload: '{"entities": [',
    });
    const body = expectProblem(res, 400, "INVALID_REQUEST");
    expect(body.detail).to.match(/not valid JSON/);
  });

  it("answers a body over the limit with 413 problem+json", async () => {
    const res = await server.app.inject({
      method: "POST",
      url: "/graph/entities",
      headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": ctx.tenant, "content-type": "application/json" },
      payload: JSON.stringify({ entities: [{ type: "T", key: "x".repeat(4000) }] }),
    });
    const body = expectProblem(res, 413, "INVALID_REQUEST");
    expect(body.detail).to.match(/larger than the limit/);
  });

  it("answers a body of another media type with 415 problem+json", async () => {
    const res = await server.app.inject({
      method: "POST",
      url: "/graph/entities",
      headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": ctx.tenant, "content-type": "text/plain" },
      payload: "hello",
    });
    expectProblem(res, 415, "INVALID_REQUEST");
  });

  it("answers a body of the wrong shape with every problem listed", async () => {
    const res = await server.app.inject({
      method: "POST",
      url: "/graph/entities",
      headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": ctx.tenant },
      payload: { entities: [{ type: "", key: 5, colour: "red" }] },
    });
    const body = expectProblem(res, 400, "INVALID_REQUEST");
    const paths = (body.errors as { path: string }[]).map((e) => e.path);
    expect(paths).to.have.members(["body.entities.0.type", "body.entities.0.key", "body.entities.0.colour"]);
  });
});

describe("REST skeleton without its database", function () {
  this.timeout(30_000);

  it("answers /health with 503 UNAVAILABLE when the database is gone", async () => {
    const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
    const server = await testServer(db);
    await db.close();
    const res = await server.app.inject({ method: "GET", url: "/health" });
    expect(res.statusCode).to.equal(503);
    expect(res.json()).to.include({ code: "UNAVAILABLE", status: 503 });
    await server.app.close();
  });

  it("answers a request with 503 UNAVAILABLE when PostgreSQL does not accept connections", async () => {
    // Port 1 on the loopback refuses at once: a database that is down.
    const knex = knexFactory({ client: "pg", connection: "postgres://postgres@127.0.0.1:1/test", acquireConnectionTimeout: 2000, log: { warn: () => {}, error: () => {} } });
    const notifications = postgresNotifications("postgres://postgres@127.0.0.1:1/test", 1000);
    const down: Database = { knex, graph: { knex, presetTimeoutMs: undefined }, kind: "postgres", notifications, ping: async () => {}, close: () => knex.destroy() };
    const server = await testServer(down);
    const res = await server.app.inject({
      method: "GET",
      url: "/graph/entities",
      headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": "t" },
    });
    expect(res.statusCode).to.equal(503);
    expect(res.json()).to.include({ code: "UNAVAILABLE" });
    const logged = server.logs.entries.find((e) => e.message === "request failed");
    expect(logged).to.include({ level: "warn", code: "UNAVAILABLE" });
    await server.app.close();
    await down.close();
  });
});
