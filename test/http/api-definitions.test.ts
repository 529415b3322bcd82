import { expect } from "chai";
import type { LightMyRequestResponse } from "fastify";
import { EXAMPLE_DEFINITION, exampleGraph, type ExampleAgreement } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { describeEachBackend, type BackendContext } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { SignJWT } from "jose";
import { adminToken, TEST_JWT_SECRET, userToken } from "../support/tokens.js";

const AGREEMENTS: ExampleAgreement[] = [
  { publicId: "AGR-1", accessPoints: [["EAN-11", "ELECTRICITY"], ["EAN-12", "GAS"]] },
  { publicId: "AGR-2", accessPoints: [["EAN-21", "WATER"]] },
];

async function seed(ctx: BackendContext, tenant: string, agreements = AGREEMENTS) {
  const { entities, links } = exampleGraph(tenant, agreements);
  await upsertEntities(ctx.db.knex, tenant, entities);
  await createLinks(ctx.db.knex, tenant, links);
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  const body = res.json() as { status: number; code: string; detail: string; title: string; type: string; errors?: { path: string; message: string }[] };
  expect(body).to.include({ status, code });
  expect(body.title).to.be.a("string");
  expect(body.type).to.be.a("string");
  return body;
}

describeEachBackend("API definitions over REST", (ctx) => {
  let server: TestServer;
  let admin: string;
  let user: string;
  before(async () => {
    server = await testServer(ctx.db, { TRANSFORM_TIMEOUT_MS: "700" });
    admin = await adminToken();
    user = await userToken("user-42");
  });
  after(() => server.app.close());

  const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", url: string, payload?: unknown, tenant = ctx.tenant, token = admin) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });
  const request = (body: unknown, tenant = ctx.tenant, token = user) => call("POST", "/task-backend/tasks/energy/api/request", body, tenant, token);

  it("serves the specification's example end to end with a real signed JWT", async () => {
    await seed(ctx, ctx.tenant);
    const created = await call("POST", "/api-definitions", EXAMPLE_DEFINITION);
    expect(created.statusCode, created.body).to.equal(201);
    const res = await request({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
    expect(res.statusCode, res.body).to.equal(200);
    expect(res.headers["content-type"]).to.match(/^application\/json/);
    const stored = await ctx.db.knex("entities").where({ tenant: ctx.tenant, type: "AccessPoint" }).orderBy("key").select("id", "key", "attributes");
    const expected = (stored as { id: string; key: string; attributes: Record<string, string> }[])
      .filter((e) => e.key.startsWith("EAN-1"))
      .map((e) => ({ externalId: e.attributes.externalId, publicId: e.attributes.publicId, id: e.id, accessPointType: e.attributes.accessPointType }));
    expect(res.json()).to.deep.equal({ accessPoints: expected });
    expect(expected.map((e) => e.accessPointType)).to.deep.equal(["ELECTRICITY", "GAS"]);
  });

  it("creates, reads, lists, replaces, deactivates and deletes a definition", async () => {
    const created = (await call("POST", "/api-definitions", { ...EXAMPLE_DEFINITION, transform: "" })).json() as Record<string, unknown>;
    expect(created).to.include({ externalId: EXAMPLE_DEFINITION.externalId, name: EXAMPLE_DEFINITION.name, version: "1.0", active: true, transform: "" });
    expect(created.id).to.match(/^[0-9a-f-]{36}$/);
    expect(created.createdAt).to.equal(created.updatedAt);
    expect(created.data).to.deep.equal(EXAMPLE_DEFINITION.data);

    const read = await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`);
    expect(read.json()).to.deep.equal(created);

    await call("POST", "/api-definitions", { externalId: "another", query: "T ?t." });
    const page = (await call("GET", "/api-definitions?limit=1&offset=1")).json() as { apiDefinitions: { externalId: string }[]; total: number };
    expect(page.total).to.equal(2);
    expect(page.apiDefinitions.map((d) => d.externalId)).to.deep.equal(["another"]);

    const replaced = (await call("PUT", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { ...EXAMPLE_DEFINITION, version: "2.0" })).json() as Record<string, string>;
    expect(replaced.version).to.equal("2.0");
    expect(replaced.transform).to.equal(EXAMPLE_DEFINITION.transform);
    expect(replaced.id).to.equal(created.id);
    expect(Date.parse(replaced.updatedAt!)).to.be.greaterThan(Date.parse(created.updatedAt as string));

    const off = (await call("PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: false })).json() as { active: boolean };
    expect(off.active).to.equal(false);
    expect(((await call("GET", "/api-definitions?active=false")).json() as { total: number }).total).to.equal(1);

    expect((await call("DELETE", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`)).statusCode).to.equal(204);
    expectProblem(await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`), 404, "API_DEFINITION_NOT_FOUND");
    expectProblem(await call("DELETE", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`), 404, "API_DEFINITION_NOT_FOUND");
  });

  it("keeps an empty transform empty and answers with the query output", async () => {
    await seed(ctx, ctx.tenant);
    await call("POST", "/api-definitions", { ...EXAMPLE_DEFINITION, transform: "   " });
    expect(((await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`)).json() as { transform: string }).transform).to.equal("");
    const { rows } = (await ctx.db.knex.raw("select transform from api_definitions where tenant = ?", [ctx.tenant])) as { rows: { transform: string | null }[] };
    expect(rows[0]?.transform).to.equal(null);
    const res = await request({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-2" } });
    const body = res.json() as Record<string, { key: string }[]>;
    expect(Object.keys(body)).to.deep.equal(["tenant", "indexSet", "agreement", "product", "arrangement", "relation", "accessPoint"]);
    expect(body.accessPoint?.map((e) => e.key)).to.deep.equal(["EAN-21"]);
  });

  it("refuses a duplicate externalId with 409 and an invalid definition with every problem", async () => {
    await call("POST", "/api-definitions", EXAMPLE_DEFINITION);
    expectProblem(await call("POST", "/api-definitions", EXAMPLE_DEFINITION), 409, "INVALID_DEFINITION");
    const invalid = expectProblem(
      await call("POST", "/api-definitions", { externalId: "bad", query: "T ?t; entity:key ${x}.", transform: "${y}", data: { queryParameters: [{ name: "z" }] } }),
      400,
      "INVALID_DEFINITION",
    );
    expect(invalid.errors?.map((e) => e.message)).to.deep.equal([
      "${x} is used but not declared in data.queryParameters",
      "${y} is used but not declared in data.queryParameters",
      'parameter "z" is declared but used in neither the query nor the transform',
    ]);
    expectProblem(await call("GET", "/api-definitions/bad"), 404, "API_DEFINITION_NOT_FOUND");
    // A failed replace leaves the stored definition as it was.
    expectProblem(await call("PUT", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { ...EXAMPLE_DEFINITION, query: "T ?t" }), 400, "INVALID_DEFINITION");
    expect(((await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`)).json() as { query: string }).query).to.equal(EXAMPLE_DEFINITION.query);
  });

  it("answers every request error with its code", async () => {
    await seed(ctx, ctx.tenant);
    await call("POST", "/api-definitions", EXAMPLE_DEFINITION);
    const body = { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } };
    expectProblem(await server.app.inject({ method: "POST", url: "/task-backend/tasks/energy/api/request", payload: body, headers: { "x-tenant-id": ctx.tenant } }), 401, "UNAUTHENTICATED");
    expectProblem(await server.app.inject({ method: "POST", url: "/task-backend/tasks/energy/api/request", payload: body, headers: { authorization: `Bearer ${user}` } }), 400, "MISSING_TENANT");
    expectProblem(await request({ ...body, apiDefinitionExternalId: "nope" }), 404, "API_DEFINITION_NOT_FOUND");
    const missing = expectProblem(await request({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId }), 400, "INVALID_QUERY_PARAMETERS");
    expect(missing.detail).to.equal("the query parameters do not match the definition: publicId is declared by the definition but missing");
    const extra = expectProblem(await request({ ...body, queryParameters: { publicId: "AGR-1", colour: "red" } }), 400, "INVALID_QUERY_PARAMETERS");
    expect(extra.errors).to.deep.equal([{ path: "queryParameters.colour", message: "is not a parameter of this definition" }]);
    const override = expectProblem(await request({ ...body, queryParameters: { publicId: "AGR-1", tenantId: "someone-else" } }), 400, "INVALID_QUERY_PARAMETERS");
    expect(override.errors?.[0]?.path).to.equal("queryParameters.tenantId");
    expectProblem(await request({ queryParameters: {} }), 400, "INVALID_REQUEST");
    expectProblem(await call("POST", "/task-backend/tasks/Not_A_Segment/api/request", body, ctx.tenant, user), 400, "INVALID_REQUEST");
    await call("PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: false });
    expectProblem(await request(body), 409, "API_DEFINITION_INACTIVE");
    await call("PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: true });
    expect((await request(body)).statusCode).to.equal(200);
  });

  it("needs no role to request, but the admin role to manage", async () => {
    expectProblem(await call("POST", "/api-definitions", EXAMPLE_DEFINITION, ctx.tenant, user), 403, "FORBIDDEN");
    expectProblem(await call("GET", "/api-definitions", undefined, ctx.tenant, user), 403, "FORBIDDEN");
  });

  it("takes ${userId} from the token and ${tenantId} from the header, never from the body", async () => {
    await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Task", key: "t1", attributes: { assignee: "user-42", tenantName: ctx.tenant } },
      { type: "Task", key: "t2", attributes: { assignee: "someone", tenantName: ctx.tenant } },
    ]);
    await call("POST", "/api-definitions", {
      externalId: "my-tasks",
      data: { queryParameters: [{ name: "userId" }, { name: "tenantId" }] },
      query: "Task ?task; attribute:assignee ${userId}; attribute:tenantName ${tenantId}.",
      transform: '{ "mine": result(?task) { key }, "me": ${userId} }',
    });
    const res = await request({ apiDefinitionExternalId: "my-tasks" });
    expect(res.json()).to.deep.equal({ mine: [{ key: "t1" }], me: "user-42" });
    expectProblem(await request({ apiDefinitionExternalId: "my-tasks", queryParameters: { userId: "someone" } }), 400, "INVALID_QUERY_PARAMETERS");
    // A valid token without a user claim cannot stand for ${userId}.
    const anonymous = await new SignJWT({ roles: [], tenants: "*" }).setProtectedHeader({ alg: "HS256" }).setExpirationTime("5m").sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const noUser = expectProblem(await request({ apiDefinitionExternalId: "my-tasks" }, ctx.tenant, anonymous), 400, "INVALID_QUERY_PARAMETERS");
    expect(noUser.errors).to.deep.equal([{ path: "queryParameters.userId", message: "the token carries no user id for ${userId}" }]);
  });

  it("keeps tenants apart: another tenant cannot read, run, list or detect a definition", async () => {
    await call("POST", "/api-definitions", EXAMPLE_DEFINITION);
    const other = `${ctx.tenant}-other`;
    const read = expectProblem(await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, undefined, other), 404, "API_DEFINITION_NOT_FOUND");
    const unknown = expectProblem(await call("GET", "/api-definitions/never-existed", undefined, other), 404, "API_DEFINITION_NOT_FOUND");
    expect(read.detail.replace(EXAMPLE_DEFINITION.externalId, "X")).to.equal(unknown.detail.replace("never-existed", "X"));
    expectProblem(await request({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } }, other), 404, "API_DEFINITION_NOT_FOUND");
    expect(((await call("GET", "/api-definitions", undefined, other)).json() as { total: number }).total).to.equal(0);
    expectProblem(await call("PATCH", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, { active: false }, other), 404, "API_DEFINITION_NOT_FOUND");
    expectProblem(await call("DELETE", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`, undefined, other), 404, "API_DEFINITION_NOT_FOUND");
    // The same externalId is free in the other tenant: no 409 gives the first one away.
    expect((await call("POST", "/api-definitions", EXAMPLE_DEFINITION, other)).statusCode).to.equal(201);
    expect(((await call("GET", `/api-definitions/${EXAMPLE_DEFINITION.externalId}`)).json() as { active: boolean }).active).to.equal(true);
  });

  it("stops a malicious transform within the limit while other requests keep being served", async () => {
    await seed(ctx, ctx.tenant);
    await call("POST", "/api-definitions", EXAMPLE_DEFINITION);
    await call("POST", "/api-definitions", { externalId: "endless", query: "T ?t.", transform: "($loop := function($i){ $loop($i + 1) }; $loop(0))" });
    await call("POST", "/api-definitions", { externalId: "deep", query: "T ?t.", transform: "($f := function($x){ 1 + $f($x) }; $f(1))" });
    await call("POST", "/api-definitions", { externalId: "huge", query: "T ?t.", transform: "$count([1..9000000])" });

    let slowDone = false;
    const slow = request({ apiDefinitionExternalId: "endless" }).then((res) => ((slowDone = true), res));
    // Each of these is answered while the endless transform still runs (an order, not a timing).
    const servedWhileSlowRuns: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await request({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-2" } });
      expect(res.statusCode).to.equal(200);
      servedWhileSlowRuns.push(!slowDone);
    }
    const stopped = expectProblem(await slow, 422, "TRANSFORM_FAILED");
    // Stopped by the 700 ms limit, as the detail says.
    expect(stopped.detail).to.match(/700 m(s|illiseconds)/);
    expect(servedWhileSlowRuns).to.deep.equal([true, true, true, true, true]);

    expect(expectProblem(await request({ apiDefinitionExternalId: "deep" }), 422, "TRANSFORM_FAILED").detail).to.match(/Stack overflow/);
    expect(expectProblem(await request({ apiDefinitionExternalId: "huge" }), 422, "TRANSFORM_FAILED").detail).to.match(/maximum sequence length/);
  });

  it("runs an unsaved definition in the test tool, and reports its problems instead", async () => {
    await seed(ctx, ctx.tenant);
    const { externalId: _unused, ...unsaved } = EXAMPLE_DEFINITION;
    const ok = await call("POST", "/api-definitions/test", { definition: unsaved, queryParameters: { publicId: "AGR-2" } });
    expect(ok.statusCode, ok.body).to.equal(200);
    const outcome = ok.json() as { queryOutput: Record<string, { key: string }[]>; result: { accessPoints: { externalId: string }[] }; problems: unknown[] };
    expect(outcome.queryOutput.accessPoint?.map((e) => e.key)).to.deep.equal(["EAN-21"]);
    expect(outcome.result.accessPoints.map((a) => a.externalId)).to.deep.equal(["EAN-21"]);
    expect(outcome.problems).to.deep.equal([]);
    expect(((await call("GET", "/api-definitions")).json() as { total: number }).total).to.equal(0);

    const invalid = (await call("POST", "/api-definitions/test", { definition: { ...unsaved, transform: "result(?nobody) { id }" }, queryParameters: { publicId: "AGR-2" } })).json() as {
      queryOutput: unknown;
      problems: { message: string }[];
    };
    expect(invalid.queryOutput).to.equal(null);
    expect(invalid.problems.map((p) => p.message)).to.deep.equal(["result(?nobody) names a label the query does not bind"]);

    const failing = (await call("POST", "/api-definitions/test", { definition: { ...unsaved, transform: '$number("x") & ${publicId}' }, queryParameters: { publicId: "AGR-2" } })).json() as {
      queryOutput: Record<string, unknown[]>;
      result: unknown;
      problems: { path: string }[];
    };
    expect(failing.queryOutput.accessPoint).to.have.length(1);
    expect(failing.result).to.equal(null);
    expect(failing.problems[0]?.path).to.equal("transform");
  });
});
