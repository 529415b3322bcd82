import { expect } from "chai";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LightMyRequestResponse } from "fastify";
import { openDatabase, type Database } from "../../src/db/database.js";
import type { HistoryEntry } from "../../src/db/definition-history.js";
import { describeEachBackend, randomTenant, TEST_DATABASE_URL, type BackendName } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken, hsToken, userToken } from "../support/tokens.js";

const QUERY = "Tenant ?tenant; entity:key ${tenantId}.";
const apiDefinition = (answer: number, extra: object = {}) => ({
  name: "Answer",
  externalId: "answer",
  version: "1",
  data: { queryParameters: [{ name: "tenantId", type: "string" }] },
  query: QUERY,
  transform: `{ "answer": ${answer} }`,
  ...extra,
});
const calculation = (value: number, extra: object = {}) => ({
  name: "Constant",
  externalId: "constant",
  calculationType: "EXPRESSION",
  data: { calculation: { expression: "a * 2", expressionType: "VALUE", scope: { a: { type: "VALUE", value } } } },
  ...extra,
});

type Entry = HistoryEntry<Record<string, unknown>>;

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  expect(res.json()).to.include({ status, code });
  return res.json() as { detail: string; errors?: { path: string; message: string }[] };
}

/** The fields a user writes: what a restore must give back. */
const owned = ({ id: _i, createdAt: _c, updatedAt: _u, ...rest }: Record<string, unknown>) => rest;

describeEachBackend("definition history over REST", (ctx) => {
  let server: TestServer;
  let admin: string;
  let named: string;
  before(async () => {
    server = await testServer(ctx.db);
    admin = await adminToken();
    named = await hsToken({ roles: ["admin"], sub: "u-7", claims: { name: "Ada Lovelace" } });
  });
  after(() => server.app.close());

  const call = (method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE", url: string, payload?: unknown, token = admin) =>
    server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant } });
  const history = async (url: string): Promise<Entry[]> => {
    const res = await call("GET", `${url}/history`);
    expect(res.statusCode, res.body).to.equal(200);
    return (res.json() as { history: Entry[] }).history;
  };
  const ask = async () => {
    const res = await call("POST", "/task-backend/tasks/t/api/request", { apiDefinitionExternalId: "answer" }, await userToken());
    return res.statusCode === 200 ? res.json() : res.statusCode;
  };

  it("records every change of an API definition, newest first, with who, when and the whole record", async () => {
    expect((await call("POST", "/api-definitions", apiDefinition(1), named)).statusCode).to.equal(201);
    expect(await ask()).to.deep.equal({ answer: 1 });
    expect((await call("PUT", "/api-definitions/answer", apiDefinition(2))).statusCode).to.equal(200);
    expect((await call("PATCH", "/api-definitions/answer", { active: false })).statusCode).to.equal(200);
    expect((await call("PATCH", "/api-definitions/answer", { active: true })).statusCode).to.equal(200);
    const current = (await call("GET", "/api-definitions/answer")).json() as Record<string, unknown>;
    expect((await call("DELETE", "/api-definitions/answer")).statusCode).to.equal(204);

    const entries = await history("/api-definitions/answer");
    expect(entries.map((e) => [e.version, e.action])).to.deep.equal([[5, "delete"], [4, "activate"], [3, "deactivate"], [2, "update"], [1, "create"]]);
    expect(entries[4]!.changedBy).to.deep.equal({ userId: "u-7", name: "Ada Lovelace" });
    expect(entries[0]!.changedBy).to.deep.equal({ userId: "admin-1", name: null });
    expect(entries[0]!.record).to.deep.equal(current);
    expect(entries[4]!.record).to.include({ transform: '{ "answer": 1 }', active: true, externalId: "answer" });
    expect(entries[2]!.record).to.include({ active: false });
    const times = entries.map((e) => Date.parse(e.changedAt));
    expect([...times].sort((a, b) => b - a)).to.deep.equal(times);
  });

  it("restores a version, even of a deleted API definition, and the next request runs it", async () => {
    await call("POST", "/api-definitions", apiDefinition(1));
    await ask();
    await call("PUT", "/api-definitions/answer", apiDefinition(2));
    expect(await ask()).to.deep.equal({ answer: 2 });

    const restored = await call("POST", "/api-definitions/answer/history/1/restore");
    expect(restored.statusCode, restored.body).to.equal(200);
    expect(await ask(), "the cached version 2 is not run again").to.deep.equal({ answer: 1 });
    const [latest, , first] = await history("/api-definitions/answer");
    expect(latest).to.include({ version: 3, action: "restore", restoredFrom: 1 });
    expect(owned(latest!.record)).to.deep.equal(owned(first!.record));

    await call("DELETE", "/api-definitions/answer");
    expect(await ask()).to.equal(404);
    const again = await call("POST", "/api-definitions/answer/history/2/restore");
    expect(again.statusCode, again.body).to.equal(200);
    expect(await ask()).to.deep.equal({ answer: 2 });
    expect((await history("/api-definitions/answer")).map((e) => e.action)).to.deep.equal(["restore", "delete", "restore", "update", "create"]);
  });

  it("records a rename under both names, and restores the old name", async () => {
    await call("POST", "/api-definitions", apiDefinition(1));
    const renamed = await call("PUT", "/api-definitions/answer", apiDefinition(1, { externalId: "reply" }));
    expect(renamed.statusCode, renamed.body).to.equal(200);
    const [away] = await history("/api-definitions/answer");
    expect(away).to.include({ version: 2, action: "rename", renamedTo: "reply" });
    expect(away!.record).to.include({ externalId: "answer" });
    expect((await history("/api-definitions/reply")).map((e) => [e.version, e.action, e.renamedFrom])).to.deep.equal([[1, "rename", "answer"]]);
    expect((await call("POST", "/api-definitions/answer/history/1/restore")).statusCode).to.equal(200);
    expect((await call("GET", "/api-definitions/reply")).statusCode).to.equal(200);
    expect(await ask()).to.deep.equal({ answer: 1 });
  });

  it("answers problem+json for an unknown definition, an unknown version, a bad version and a missing role", async () => {
    expectProblem(await call("GET", "/api-definitions/nothing/history"), 404, "API_DEFINITION_NOT_FOUND");
    expectProblem(await call("GET", "/calculation-definitions/nothing/history"), 404, "CALCULATION_DEFINITION_NOT_FOUND");
    await call("POST", "/api-definitions", apiDefinition(1));
    await call("POST", "/calculation-definitions", calculation(1));
    const unknown = expectProblem(await call("POST", "/api-definitions/answer/history/9/restore"), 404, "API_DEFINITION_NOT_FOUND");
    expect(unknown.errors).to.deep.equal([{ path: "version", message: "is not a version of this definition" }]);
    expectProblem(await call("POST", "/calculation-definitions/constant/history/2/restore"), 404, "CALCULATION_DEFINITION_NOT_FOUND");
    expectProblem(await call("POST", "/api-definitions/answer/history/first/restore"), 400, "INVALID_REQUEST");
    expectProblem(await call("POST", "/api-definitions/answer/history/0/restore"), 400, "INVALID_REQUEST");
    expectProblem(await call("GET", "/api-definitions/answer/history", undefined, await userToken()), 403, "FORBIDDEN");
    expectProblem(await call("POST", "/calculation-definitions/constant/history/1/restore", undefined, await userToken()), 403, "FORBIDDEN");
  });

  it("records every change of a calculation definition and restores one, deleted or not", async () => {
    const value = async () => (await call("POST", "/calculation-definitions/constant/calculate", {})).json() as unknown;
    expect((await call("POST", "/calculation-definitions", calculation(1), named)).statusCode).to.equal(201);
    expect(await value()).to.deep.equal({ value: 2 });
    await call("PUT", "/calculation-definitions/constant", calculation(1, { active: false }));
    await call("PUT", "/calculation-definitions/constant", calculation(1, { active: true }));
    await call("PUT", "/calculation-definitions/constant", calculation(5));
    expect(await value()).to.deep.equal({ value: 10 });
    const restored = await call("POST", "/calculation-definitions/constant/history/1/restore", undefined, named);
    expect(restored.statusCode, restored.body).to.equal(200);
    expect(await value(), "the cached version 4 is not run again").to.deep.equal({ value: 2 });
    await call("DELETE", "/calculation-definitions/constant");
    expect((await call("POST", "/calculation-definitions/constant/history/4/restore")).statusCode).to.equal(200);
    expect(await value()).to.deep.equal({ value: 10 });

    const entries = await history("/calculation-definitions/constant");
    expect(entries.map((e) => [e.version, e.action, e.restoredFrom ?? null])).to.deep.equal([
      [7, "restore", 4], [6, "delete", null], [5, "restore", 1], [4, "update", null], [3, "activate", null], [2, "deactivate", null], [1, "create", null],
    ]);
    expect(entries[2]!.changedBy).to.deep.equal({ userId: "u-7", name: "Ada Lovelace" });
    expect(entries[0]!.record).to.include({ externalId: "constant", calculationType: "EXPRESSION", name: "Constant" });
  });

  it("checks a restored calculation as a save is: a reference gone is a 400", async () => {
    const user = { externalId: "user", calculationType: "EXPRESSION", data: { calculation: { expression: "x + 1", expressionType: "VALUE", scope: { x: { type: "EXPRESSION", expression: "constant" } } } } };
    await call("POST", "/calculation-definitions", calculation(1));
    expect((await call("POST", "/calculation-definitions", user)).statusCode).to.equal(201);
    await call("DELETE", "/calculation-definitions/user");
    await call("DELETE", "/calculation-definitions/constant");
    expectProblem(await call("POST", "/calculation-definitions/user/history/1/restore"), 400, "INVALID_DEFINITION");
    expect((await history("/calculation-definitions/user")).map((e) => e.action)).to.deep.equal(["delete", "create"]);
  });
});

describe("definition history across a restart", function () {
  this.timeout(180_000);
  for (const name of ["embedded", "postgres"] as BackendName[]) {
    it(`is still there after the service restarts [${name}]`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "history-"));
      const tenant = randomTenant();
      const open = () => openDatabase({ databaseUrl: name === "postgres" ? TEST_DATABASE_URL : undefined, dataDir: dir, poolSize: 2 });
      const start = async (db: Database) => {
        const server = await testServer(db);
        const token = await adminToken();
        const call = (method: "GET" | "POST" | "PUT", url: string, payload?: unknown) =>
          server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });
        return { server, call };
      };
      try {
        const first = await open();
        const before = await start(first);
        await before.call("POST", "/api-definitions", apiDefinition(1));
        await before.call("PUT", "/api-definitions/answer", apiDefinition(2));
        await before.call("POST", "/calculation-definitions", calculation(1));
        const expected = [before.call("GET", "/api-definitions/answer/history"), before.call("GET", "/calculation-definitions/constant/history")];
        const [api, calc] = (await Promise.all(expected)).map((r) => r.json() as { history: Entry[] });
        await before.server.app.close();
        await first.close();

        const second = await open();
        const after = await start(second);
        try {
          expect((await after.call("GET", "/api-definitions/answer/history")).json()).to.deep.equal(api);
          expect((await after.call("GET", "/calculation-definitions/constant/history")).json()).to.deep.equal(calc);
          expect(api!.history.map((e) => e.action)).to.deep.equal(["update", "create"]);
          expect((await after.call("POST", "/api-definitions/answer/history/1/restore")).statusCode).to.equal(200);
          expect((await after.call("GET", "/api-definitions/answer")).json()).to.include({ transform: '{ "answer": 1 }' });
        } finally {
          await after.server.app.close();
          await second.close();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
