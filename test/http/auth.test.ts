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

  describe("token times (exp required, nbf and iat with the clock skew)", () => {
    const now = () => Math.floor(Date.now() / 1000);
    it("refuses a token without exp, naming exp", async () => expect401(`Bearer ${await hsToken({ roles: ["admin"], expiresIn: null })}`, /"exp" claim/));
    it("refuses a token whose nbf lies beyond the skew", async () =>
      expect401(`Bearer ${await hsToken({ roles: ["admin"], claims: { nbf: now() + 60 } })}`, /"nbf" claim/));
    it("refuses a token whose iat lies beyond the skew", async () =>
      expect401(`Bearer ${await hsToken({ roles: ["admin"], claims: { iat: now() + 60 } })}`, /"iat" claim .*future/));
    it("refuses a token that expired beyond the skew", async () =>
      expect401(`Bearer ${await hsToken({ roles: ["admin"], expiresIn: now() - 10 })}`, /expired/));
    it("accepts nbf, iat and exp within the default skew of 5 s", async () => {
      const token = await hsToken({ roles: ["admin"], expiresIn: now() - 2, claims: { nbf: now() + 2, iat: now() + 2 } });
      const res = await list({ authorization: `Bearer ${token}`, "x-tenant-id": randomTenant() });
      expect(res.statusCode).to.equal(200);
    });
    it("refuses a token accepted before once it has expired (verified tokens are remembered only until exp)", async () => {
      const strict = await testServer(db, { JWT_CLOCK_SKEW_SECONDS: "0" });
      try {
        const exp = now() + 2;
        const headers = { authorization: `Bearer ${await hsToken({ roles: ["admin"], expiresIn: exp })}`, "x-tenant-id": randomTenant() };
        expect((await strict.app.inject({ method: "GET", url: "/graph/entities", headers })).statusCode).to.equal(200);
        expect((await strict.app.inject({ method: "GET", url: "/graph/entities", headers })).statusCode).to.equal(200);
        await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 50));
        const res = await strict.app.inject({ method: "GET", url: "/graph/entities", headers });
        expect(res.statusCode).to.equal(401);
        expect((res.json() as { detail: string }).detail).to.equal("the token has expired");
      } finally {
        await strict.app.close();
      }
    });
    it("uses JWT_CLOCK_SKEW_SECONDS", async () => {
      const wide = await testServer(db, { JWT_CLOCK_SKEW_SECONDS: "120" });
      const none = await testServer(db, { JWT_CLOCK_SKEW_SECONDS: "0" });
      try {
        const token = await hsToken({ roles: ["admin"], expiresIn: now() - 60, claims: { nbf: now() + 60, iat: now() + 60 } });
        const headers = { authorization: `Bearer ${token}`, "x-tenant-id": randomTenant() };
        expect((await wide.app.inject({ method: "GET", url: "/graph/entities", headers })).statusCode).to.equal(200);
        const future = await hsToken({ roles: ["admin"], claims: { iat: now() + 3 } });
        const refused = await none.app.inject({ method: "GET", url: "/graph/entities", headers: { ...headers, authorization: `Bearer ${future}` } });
        expect(refused.statusCode).to.equal(401);
        expect((refused.json() as { detail: string }).detail).to.match(/"iat" claim/);
      } finally {
        await wide.app.close();
        await none.app.close();
      }
    });
  });

  describe("tenant binding (the tenants claim)", () => {
    async function call(tenant: string, options: Parameters<typeof hsToken>[0], url = "/graph/entities") {
      return server.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${await hsToken(options)}`, "x-tenant-id": tenant } });
    }
    function expect403(res: Awaited<ReturnType<typeof call>>, tenant: string) {
      expect(res.statusCode).to.equal(403);
      expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
      const body = res.json() as { code: string; detail: string };
      expect(body).to.include({ code: "FORBIDDEN", status: 403, detail: "this token does not name the tenant in X-TENANT-ID" });
      expect(JSON.stringify(body)).not.to.include(tenant);
    }

    it("lets a token act in the tenants it names, and only there", async () => {
      const [a, b, c] = [randomTenant(), randomTenant(), randomTenant()];
      expect((await call(a, { roles: ["admin"], tenants: [a, b] })).statusCode).to.equal(200);
      expect((await call(b, { roles: ["admin"], tenants: [a, b] })).statusCode).to.equal(200);
      expect403(await call(c, { roles: ["admin"], tenants: [a, b] }), c);
    });

    it("answers a tenant that exists and one that does not alike", async () => {
      const [mine, existing] = [randomTenant(), randomTenant()];
      await server.app.inject({
        method: "POST",
        url: "/graph/entities",
        headers: { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": existing },
        payload: { entities: [{ type: "Agreement", key: "AGR-1" }] },
      });
      const a = await call(existing, { roles: ["admin"], tenants: [mine] });
      const b = await call(randomTenant(), { roles: ["admin"], tenants: [mine] });
      expect403(a, existing);
      // Alike but for each answer's own request id.
      const { requestId: _a, ...first } = a.json() as Record<string, unknown>;
      const { requestId: _b, ...second } = b.json() as Record<string, unknown>;
      expect(first).to.deep.equal(second);
    });

    it('treats "*" (alone or in the array) as every tenant', async () => {
      expect((await call(randomTenant(), { roles: ["admin"], tenants: "*" })).statusCode).to.equal(200);
      expect((await call(randomTenant(), { roles: ["admin"], tenants: ["other", "*"] })).statusCode).to.equal(200);
    });

    it("gives a token without the claim no tenant", async () => {
      const tenant = randomTenant();
      expect403(await call(tenant, { roles: ["admin"], tenants: null }), tenant);
      expect403(await call(tenant, { roles: ["admin"], tenants: [] }), tenant);
    });

    it("checks the tenant before the role, and on the request endpoint too", async () => {
      const tenant = randomTenant();
      expect403(await call(tenant, { roles: [], tenants: ["elsewhere"] }), tenant);
      const res = await server.app.inject({
        method: "POST",
        url: "/task-backend/tasks/x/api/request",
        headers: { authorization: `Bearer ${await hsToken({ tenants: ["elsewhere"] })}`, "x-tenant-id": tenant },
        payload: { apiDefinitionExternalId: "anything" },
      });
      expect403(res, tenant);
    });

    it("keeps roles within the named tenants: an admin of A is refused in B", async () => {
      const [a, b] = [randomTenant(), randomTenant()];
      expect((await call(a, { roles: ["admin"], tenants: [a] })).statusCode).to.equal(200);
      expect403(await call(b, { roles: ["admin"], tenants: [a] }), b);
      const user = await call(a, { roles: [], tenants: [a] });
      expect(user.statusCode).to.equal(403);
      expect(user.json()).to.include({ code: "FORBIDDEN" });
      expect((user.json() as { detail: string }).detail).to.match(/admin/);
    });

    for (const [shape, value] of [
      ["a single name", "acme"],
      ["a number", 7],
      ["an array with a number", ["acme", 7]],
      ["an object", { acme: true }],
    ] as const) {
      it(`refuses a tenants claim that is ${shape} as unauthenticated`, async () =>
        expect401(`Bearer ${await hsToken({ roles: ["admin"], tenants: null, claims: { tenants: value } })}`, /"tenants" claim .*array of tenant names/));
    }

    it("reads the claim named by JWT_TENANTS_CLAIM", async () => {
      const custom = await testServer(db, { JWT_TENANTS_CLAIM: "https://example.com/tenants" });
      try {
        const tenant = randomTenant();
        const get = async (claims: Record<string, unknown>) =>
          custom.app.inject({
            method: "GET",
            url: "/graph/entities",
            headers: { authorization: `Bearer ${await hsToken({ roles: ["admin"], tenants: null, claims })}`, "x-tenant-id": tenant },
          });
        expect((await get({ "https://example.com/tenants": [tenant] })).statusCode).to.equal(200);
        expect403(await get({ tenants: [tenant] }), tenant);
      } finally {
        await custom.app.close();
      }
    });
  });

  it("uses the HS256 test secret the server is configured with", () => {
    expect(server.config.auth.disabled === false && server.config.auth.key.kind).to.equal("secret");
    expect(TEST_JWT_SECRET.length).to.be.at.least(32);
  });
});
