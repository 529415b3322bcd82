import { expect } from "chai";
import type { Database } from "../../src/db/database.js";
import { backend, randomTenant } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken, ecKeyPair, hsToken, rsaKeyPair, sign, TEST_JWT_SECRET, unsignedToken, userToken } from "../support/tokens.js";

describe("authentication and tenancy", () => {
  let db: Database;
  let server: TestServer;
  before(async () => {
    db = await backend("embedded");
    server = await testServer(db);
  });
  after(() => server.app.close());

  const list = (headers: Record<string, string>) => server.app.inject({ method: "GET", url: "/graph/entities", headers });

  async function expect401(authorization: string | undefined, detail: RegExp) {
    const headers: Record<string, string> = { "x-tenant-id": randomTenant() };
    if (authorization !== undefined) headers.authorization = authorization;
    const res = await list(headers);
    expect(res.statusCode).to.equal(401);
    expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
    expect(res.json()).to.include({ code: "UNAUTHENTICATED", status: 401 });
    expect((res.json() as { detail: string }).detail).to.match(detail);
  }

  it("accepts a valid admin token with a tenant", async () => {
    const res = await list({ authorization: `Bearer ${await adminToken()}`, "x-tenant-id": randomTenant() });
    expect(res.statusCode).to.equal(200);
    expect(res.json()).to.deep.equal({ entities: [], total: 0, limit: 100, offset: 0 });
  });

  it("refuses a request without a token", () => expect401(undefined, /Authorization header is missing/));
  it("refuses another scheme than Bearer", () => expect401("Basic dXNlcjpwYXNz", /Bearer <token>/));
  it("refuses a malformed token", () => expect401("Bearer not.a.jwt", /not a well-formed/));
  it("refuses alg none", () => expect401(`Bearer ${unsignedToken({ sub: "x", roles: ["admin"] })}`, /algorithm is not accepted/));
  it("refuses a token signed with another secret", async () =>
    expect401(`Bearer ${await hsToken({ roles: ["admin"] }, "another-secret-that-is-32-bytes-long!")}`, /signature is not valid/));
  it("refuses an expired token", async () =>
    expect401(`Bearer ${await hsToken({ roles: ["admin"], expiresIn: Math.floor(Date.now() / 1000) - 60 })}`, /expired/));
  it("refuses an RS256 token when an HS256 secret is configured", async () =>
    expect401(`Bearer ${await sign(rsaKeyPair().privateKey, "RS256", { roles: ["admin"] })}`, /algorithm is not accepted/));

  it("requires X-TENANT-ID after a valid token", async () => {
    const res = await list({ authorization: `Bearer ${await adminToken()}` });
    expect(res.statusCode).to.equal(400);
    expect(res.json()).to.include({ code: "MISSING_TENANT" });
    const blank = await list({ authorization: `Bearer ${await adminToken()}`, "x-tenant-id": "   " });
    expect(blank.json()).to.include({ code: "MISSING_TENANT" });
  });

  it("refuses an admin endpoint to a token without the admin role", async () => {
    const res = await list({ authorization: `Bearer ${await userToken()}`, "x-tenant-id": randomTenant() });
    expect(res.statusCode).to.equal(403);
    expect(res.json()).to.include({ code: "FORBIDDEN" });
  });

  it("keeps public routes public", async () => {
    expect((await server.app.inject({ method: "GET", url: "/health" })).statusCode).to.equal(200);
    expect((await server.app.inject({ method: "GET", url: "/openapi.json" })).statusCode).to.equal(200);
  });

  for (const [alg, pair] of [
    ["RS256", rsaKeyPair],
    ["ES256", ecKeyPair],
  ] as const) {
    it(`verifies ${alg} tokens with JWT_PUBLIC_KEY and refuses an HS256 token made with the public key as secret`, async () => {
      const { privateKey, publicPem } = pair();
      const keyed = await testServer(db, { JWT_SECRET: "", JWT_PUBLIC_KEY: publicPem });
      try {
        const tenant = randomTenant();
        const good = await keyed.app.inject({
          method: "GET",
          url: "/graph/entities",
          headers: { authorization: `Bearer ${await sign(privateKey, alg, { roles: ["admin"] })}`, "x-tenant-id": tenant },
        });
        expect(good.statusCode).to.equal(200);
        const confused = await keyed.app.inject({
          method: "GET",
          url: "/graph/entities",
          headers: { authorization: `Bearer ${await hsToken({ roles: ["admin"] }, publicPem)}`, "x-tenant-id": tenant },
        });
        expect(confused.statusCode).to.equal(401);
      } finally {
        await keyed.app.close();
      }
    });
  }

  it("checks the issuer and audience when they are configured", async () => {
    const strict = await testServer(db, { JWT_ISSUER: "https://idp.example", JWT_AUDIENCE: "task-backend" });
    try {
      const call = async (claims: Record<string, string>) =>
        strict.app.inject({
          method: "GET",
          url: "/graph/entities",
          headers: { authorization: `Bearer ${await hsToken({ roles: ["admin"], claims })}`, "x-tenant-id": randomTenant() },
        });
      expect((await call({ iss: "https://idp.example", aud: "task-backend" })).statusCode).to.equal(200);
      const wrong = await call({ iss: "https://evil.example", aud: "task-backend" });
      expect(wrong.statusCode).to.equal(401);
      expect((wrong.json() as { detail: string }).detail).to.match(/"iss" claim/);
    } finally {
      await strict.app.close();
    }
  });

  it("lets every request through as an admin when auth is disabled", async () => {
    const open = await testServer(db, { JWT_SECRET: "", AUTH_DISABLED: "true" });
    try {
      const res = await open.app.inject({ method: "GET", url: "/graph/entities", headers: { "x-tenant-id": randomTenant() } });
      expect(res.statusCode).to.equal(200);
    } finally {
      await open.app.close();
    }
  });

  it("uses the HS256 test secret the server is configured with", () => {
    expect(server.config.auth.disabled === false && server.config.auth.key.kind).to.equal("secret");
    expect(TEST_JWT_SECRET.length).to.be.at.least(32);
  });
});
