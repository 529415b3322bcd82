import { expect } from "chai";
import { backend, randomTenant } from "../support/backends.js";
import { Keycloak, KEYCLOAK_START_TIMEOUT_MS } from "../support/keycloak.js";
import { testServer, type TestServer } from "../support/server.js";

/**
 * The service behind a real Keycloak (org.keycloak:keycloak-quarkus-dist from Maven Central, unpacked
 * by test/engines/keycloak/pom.xml), started once for this file with the realm of
 * test/engines/keycloak/realm.json: the service finds the keys by OIDC discovery, reads the roles
 * from `realm_access.roles` through JWT_ROLE_MAP and the tenants from the groups' claim `org.tenants`.
 */
describe("a real Keycloak as the identity provider", function () {
  this.timeout(KEYCLOAK_START_TIMEOUT_MS + 120_000);
  let keycloak: Keycloak;
  let server: TestServer;
  // The tenants are the realm's groups; the test's own rows are kept apart by a random suffix in their keys.
  const tenant = { acme: "acme", globex: "globex" };

  before(async () => {
    keycloak = await Keycloak.start();
    console.log(`    Keycloak ${keycloak.version} on Java at ${keycloak.javaHome}, ready in ${(keycloak.startupMs / 1000).toFixed(0)} s`);
    server = await testServer(await backend("postgres"), {
      JWT_SECRET: "",
      OIDC_ISSUER_URL: keycloak.issuer,
      JWT_AUDIENCE: "process-service",
      JWT_ROLES_CLAIM: "realm_access.roles",
      JWT_ROLE_MAP: "service-admin=admin",
      JWT_TENANTS_CLAIM: "org.tenants",
      JWT_USER_CLAIM: "preferred_username",
    });
  });
  after(async () => {
    await server?.app.close();
    await keycloak?.stop();
  });

  const password = (username: string) => keycloak.token({ grant_type: "password", client_id: "service-cli", username, password: `${username}-password` });
  const clientCredentials = (clientId: string) => keycloak.token({ grant_type: "client_credentials", client_id: clientId, client_secret: `${clientId}-secret` });
  const call = (token: string, tenantId: string, method: "GET" | "POST" = "GET", body?: unknown) =>
    server.app.inject({
      method,
      url: "/graph/entities",
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenantId, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  it("accepts a client-credentials token of a service account with the mapped admin role, in the tenant its group names", async () => {
    const token = await clientCredentials("ops-robot");
    const key = `robot-${randomTenant()}`;
    const created = await call(token, tenant.acme, "POST", { entities: [{ type: "Machine", key, attributes: { by: "ops-robot" } }] });
    expect(created.statusCode, created.body).to.equal(200);
    expect((created.json() as { entities: { key: string }[] }).entities.map((e) => e.key)).to.deep.equal([key]);
    expect((await call(token, tenant.acme)).statusCode).to.equal(200);
    const elsewhere = await call(token, tenant.globex);
    expect(elsewhere.statusCode).to.equal(403);
    expect(elsewhere.json()).to.include({ code: "FORBIDDEN", detail: "this token does not name the tenant in X-TENANT-ID" });
  });

  it("accepts a password-grant token of a user with the admin role in the user's tenant only", async () => {
    const alice = await password("alice");
    expect((await call(alice, tenant.acme)).statusCode).to.equal(200);
    expect((await call(alice, tenant.globex)).statusCode).to.equal(403);
    const carol = await password("carol");
    expect((await call(carol, tenant.globex)).statusCode).to.equal(200);
    expect((await call(carol, tenant.acme)).statusCode).to.equal(403);
  });

  it("refuses an admin endpoint to a user whose roles the map does not name, while the request endpoint takes the token", async () => {
    const bob = await password("bob");
    const refused = await call(bob, tenant.acme);
    expect(refused.statusCode).to.equal(403);
    expect(refused.json()).to.include({ code: "FORBIDDEN", detail: "this endpoint needs a token whose roles claim contains admin" });
    // The request endpoint needs no role: past authentication and the tenant, it looks the definition up.
    const request = await server.app.inject({
      method: "POST",
      url: "/task-backend/tasks/any/api/request",
      headers: { authorization: `Bearer ${bob}`, "x-tenant-id": tenant.acme, "content-type": "application/json" },
      payload: JSON.stringify({ apiDefinitionExternalId: `missing-${randomTenant()}` }),
    });
    expect(request.statusCode).to.equal(404);
    expect(request.json()).to.include({ code: "API_DEFINITION_NOT_FOUND" });
  });

  it("refuses a token without the service's audience, and one whose signature was altered", async () => {
    const other = await clientCredentials("other-app");
    const noAudience = await call(other, tenant.acme);
    expect(noAudience.statusCode).to.equal(401);
    expect((noAudience.json() as { detail: string }).detail).to.match(/"aud" claim/);
    const [header, payload, signature] = (await password("alice")).split(".");
    const altered = `${header}.${payload}.${signature!.startsWith("A") ? "B" : "A"}${signature!.slice(1)}`;
    const res = await call(altered, tenant.acme);
    expect(res.statusCode).to.equal(401);
    expect(res.json()).to.include({ code: "UNAUTHENTICATED", detail: "the token's signature is not valid" });
  });

  it("logged no failure to reach Keycloak", async () => {
    const warnings = server.logs.entries.filter((e) => String(e.message).includes("identity provider"));
    expect(warnings, JSON.stringify(warnings)).to.deep.equal([]);
  });
});
