import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { ProblemError } from "../../src/errors.js";
import { createAuthenticator, type Authenticator } from "../../src/http/auth.js";
import { backend, randomTenant } from "../support/backends.js";
import { JwksServer, providerKey, type ProviderKey } from "../support/jwks-server.js";
import { testServer, type TestServer } from "../support/server.js";
import { createItem, StreamClient } from "../support/streams.js";
import { hsToken, unsignedToken } from "../support/tokens.js";

/** What an authenticator answers: the principal, or the problem's status, code and detail. */
async function outcome(authenticate: Authenticator, token: string): Promise<{ roles: string[] } | { status: number; code: string; detail: string }> {
  try {
    const principal = await authenticate(`Bearer ${token}`);
    return { roles: principal.roles };
  } catch (err) {
    if (!(err instanceof ProblemError)) throw err;
    return { status: err.status, code: err.code, detail: err.message };
  }
}

describe("tokens checked with an identity provider's key set (JWKS, OIDC discovery)", () => {
  let provider: JwksServer;
  let rs256: ProviderKey;
  const admin = { roles: ["admin"], tenants: "*" };
  const authenticator = (env: Record<string, string>) => createAuthenticator(loadConfig({ OIDC_ISSUER_URL: provider.issuer, ...env }).auth);

  beforeEach(async () => {
    provider = await new JwksServer().start();
    rs256 = await providerKey("RS256");
    provider.keys = [rs256];
  });
  afterEach(() => provider.close());

  it("finds the key set by discovery and accepts RS256, PS256, ES256 and EdDSA tokens by kid, fetching once", async () => {
    const keys = await Promise.all(["PS256", "ES256", "EdDSA"].map((alg) => providerKey(alg)));
    provider.keys.push(...keys);
    const authenticate = authenticator({});
    for (const key of [rs256, ...keys]) {
      expect(await outcome(authenticate, await provider.token(key, admin)), key.alg).to.deep.equal({ roles: ["admin"] });
    }
    expect(provider.fetches).to.deep.equal({ discovery: 1, jwks: 1 });
  });

  it("takes a key set given by JWT_JWKS_URL without discovery, and the algorithms JWT_ALGORITHMS names", async () => {
    const rs384 = await providerKey("RS384");
    provider.keys.push(rs384);
    const token = await provider.token(rs384, admin);
    const defaults = createAuthenticator(loadConfig({ JWT_JWKS_URL: `${provider.url}/jwks` }).auth);
    expect(await outcome(defaults, token)).to.deep.include({ status: 401, detail: "the token's signing algorithm is not accepted" });
    const wider = createAuthenticator(loadConfig({ JWT_JWKS_URL: `${provider.url}/jwks`, JWT_ALGORITHMS: "RS256,RS384" }).auth);
    expect(await outcome(wider, token)).to.deep.equal({ roles: ["admin"] });
    expect(provider.fetches.discovery).to.equal(0);
  });

  it("refuses a wrong algorithm (HS256, none), an expired token, another issuer and a missing audience", async () => {
    const authenticate = authenticator({ JWT_AUDIENCE: "process-service" });
    const good = { ...admin, aud: "process-service" };
    expect(await outcome(authenticate, await provider.token(rs256, good))).to.deep.equal({ roles: ["admin"] });
    const hs = await hsToken({ roles: ["admin"], claims: { iss: provider.issuer, aud: "process-service" } });
    expect(await outcome(authenticate, hs)).to.deep.include({ status: 401, detail: "the token's signing algorithm is not accepted" });
    const none = unsignedToken({ ...good, iss: provider.issuer, exp: Math.floor(Date.now() / 1000) + 60 });
    expect(await outcome(authenticate, none)).to.deep.include({ status: 401, detail: "the token's signing algorithm is not accepted" });
    const expired = await provider.token(rs256, good, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
    expect(await outcome(authenticate, expired)).to.deep.include({ status: 401, detail: "the token has expired" });
    const elsewhere = await provider.token(rs256, { ...good, iss: "https://other.example.com" });
    expect(await outcome(authenticate, elsewhere)).to.deep.include({ status: 401, code: "UNAUTHENTICATED" });
    expect((await outcome(authenticate, elsewhere)) as { detail: string }).to.have.property("detail").that.matches(/"iss" claim/);
    const noAudience = await provider.token(rs256, admin);
    expect((await outcome(authenticate, noAudience)) as { detail: string }).to.have.property("detail").that.matches(/"aud" claim/);
  });

  it("fetches the key set again for an unknown kid (a key rotated in), and accepts the old key's tokens still", async () => {
    const authenticate = authenticator({ JWT_JWKS_COOLDOWN_MS: "0" });
    const before = await provider.token(rs256, admin);
    expect(await outcome(authenticate, before)).to.deep.equal({ roles: ["admin"] });
    const next = await providerKey("RS256");
    provider.keys = [next, rs256];
    expect(await outcome(authenticate, await provider.token(next, admin))).to.deep.equal({ roles: ["admin"] });
    expect(provider.fetches.jwks).to.equal(2);
  });

  it("fetches for an unknown kid at most once per cooldown: a flood of unknown kids costs one fetch", async () => {
    const authenticate = authenticator({ JWT_JWKS_COOLDOWN_MS: "600000" });
    expect(await outcome(authenticate, await provider.token(rs256, admin))).to.deep.equal({ roles: ["admin"] });
    const stranger = await providerKey("RS256");
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => outcome(authenticate, await provider.token(stranger, { ...admin, sub: `u${i}` }))));
    for (const answer of answers) expect(answer).to.deep.include({ status: 401, code: "UNAUTHENTICATED" });
    expect((answers[0] as { detail: string }).detail).to.match(/^the token's key \(kid\) is not in the identity provider's key set/);
    expect(provider.fetches.jwks, "only the first fetch: the others fall within the cooldown").to.equal(1);
  });

  it("keeps a cached key working while the provider is down, past its cache age, and answers 503 for a key it does not hold", async () => {
    const authenticate = authenticator({ JWT_JWKS_CACHE_MAX_AGE_MS: "1000", JWT_JWKS_COOLDOWN_MS: "600000" });
    expect(await outcome(authenticate, await provider.token(rs256, admin))).to.deep.equal({ roles: ["admin"] });
    provider.failing = true;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // Past JWT_JWKS_CACHE_MAX_AGE_MS: the set is fetched again, fails, and the key last fetched serves.
    expect(await outcome(authenticate, await provider.token(rs256, { ...admin, sub: "during" }))).to.deep.equal({ roles: ["admin"] });
    expect(provider.fetches.jwks).to.equal(2);
    const rotated = await providerKey("RS256");
    const refused = await outcome(authenticate, await provider.token(rotated, admin));
    expect(refused).to.deep.include({ status: 503, code: "UNAVAILABLE" });
    expect((refused as { detail: string }).detail).to.match(/identity provider's keys cannot be fetched/);
    // Within the cooldown of the failed fetch, nothing more is fetched, and cached keys still serve.
    expect(await outcome(authenticate, await provider.token(rs256, { ...admin, sub: "still" }))).to.deep.equal({ roles: ["admin"] });
    expect(provider.fetches.jwks).to.equal(2);
  });

  it("answers 503 when the provider cannot be reached at all, and recovers once it can", async () => {
    const token = await provider.token(rs256, admin);
    const url = provider.url;
    await provider.close();
    const authenticate = createAuthenticator(loadConfig({ OIDC_ISSUER_URL: url, JWT_JWKS_COOLDOWN_MS: "0" }).auth);
    expect(await outcome(authenticate, token)).to.deep.include({ status: 503, code: "UNAVAILABLE" });
    provider = await new JwksServer().start();
    provider.keys = [rs256];
    const back = createAuthenticator(loadConfig({ OIDC_ISSUER_URL: provider.issuer, JWT_JWKS_COOLDOWN_MS: "0" }).auth);
    provider.failing = true;
    const second = await provider.token(rs256, admin);
    expect(await outcome(back, second)).to.deep.include({ status: 503, code: "UNAVAILABLE" });
    provider.failing = false;
    expect(await outcome(back, second)).to.deep.equal({ roles: ["admin"] });
  });

  it("refuses a discovery document naming another issuer (503), never accepting the token", async () => {
    provider.issuerOverride = "https://impostor.example.com";
    const authenticate = authenticator({});
    expect(await outcome(authenticate, await provider.token(rs256, admin))).to.deep.include({ status: 503, code: "UNAVAILABLE" });
    expect(provider.fetches.jwks).to.equal(0);
  });

  it("reads roles and tenants from claim paths, through the role map", async () => {
    const authenticate = authenticator({ JWT_ROLES_CLAIM: "realm_access.roles,scope", JWT_TENANTS_CLAIM: "https://example.com/tenants", JWT_ROLE_MAP: "realm-admin=admin,ops=admin" });
    const token = await provider.token(rs256, { realm_access: { roles: ["realm-admin", "offline_access"] }, scope: "openid ops", "https://example.com/tenants": ["acme"] });
    const principal = await authenticate(`Bearer ${token}`);
    expect(principal.roles).to.deep.equal(["admin"]);
    expect(principal.tenants).to.deep.equal(new Set(["acme"]));
  });

  describe("over HTTP", function () {
    this.timeout(60_000);
    let db: Database;
    let server: TestServer;
    before(async () => {
      db = await backend("postgres");
    });
    afterEach(() => server?.app.close());

    it("answers 503 problem+json for a token whose key cannot be fetched, 200 for a cached key, and logs the outage", async () => {
      server = await testServer(db, { JWT_SECRET: "", OIDC_ISSUER_URL: provider.issuer, JWT_JWKS_COOLDOWN_MS: "0" });
      const tenant = randomTenant();
      const list = async (token: string) =>
        server.app.inject({ method: "GET", url: "/graph/entities", headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });
      expect((await list(await provider.token(rs256, admin))).statusCode).to.equal(200);
      provider.failing = true;
      const res = await list(await provider.token(await providerKey("ES256"), admin));
      expect(res.statusCode).to.equal(503);
      expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
      expect(res.json()).to.include({ type: "urn:problem:unavailable", code: "UNAVAILABLE", status: 503 });
      expect((await list(await provider.token(rs256, { ...admin, sub: "other" }))).statusCode).to.equal(200);
      const warning = server.logs.entries.find((e) => e.message === "the identity provider's key set could not be fetched");
      expect(warning, "the failed fetch is logged").to.not.equal(undefined);
      expect(String(warning?.error)).to.match(/200 OK/);
    });

    it("closes a stream with 1013 for a token whose key cannot be fetched, and serves one whose key is cached", async () => {
      server = await testServer(db, { JWT_SECRET: "", OIDC_ISSUER_URL: provider.issuer, JWT_JWKS_COOLDOWN_MS: "0" });
      const base = await server.app.listen({ port: 0, host: "127.0.0.1" });
      const tenant = randomTenant();
      const item = await createItem(base, await provider.token(rs256, admin), tenant);
      provider.failing = true;
      const url = `${base.replace("http", "ws")}/items/${item}/stream`;
      const cached = new StreamClient(url, { token: await provider.token(rs256, { ...admin, sub: "streamer" }), tenant });
      await cached.subscribed();
      cached.close();
      const unknown = new StreamClient(url, { token: await provider.token(await providerKey("EdDSA"), admin), tenant });
      expect(await unknown.closed).to.deep.include({ code: 1013 });
    });
  });
});
