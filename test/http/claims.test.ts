import { expect } from "chai";
import { parseRoleMap } from "../../src/config/role-map.js";
import { ProblemError } from "../../src/errors.js";
import { claimPaths, readClaim, readRoles, readTenants } from "../../src/http/claims.js";

describe("claim paths, roles and the role map", () => {
  const keycloak = {
    realm_access: { roles: ["realm-admin", "offline_access"] },
    resource_access: { "process-service": { roles: ["admin"] } },
    scope: "openid  profile ops",
    "https://example.com/roles": ["auth0-admin"],
    "a.b": "the whole name",
    a: { b: "nested" },
  };

  it("takes a top-level claim of exactly the path's name first, else follows the dots", () => {
    expect(readClaim(keycloak, "realm_access.roles")).to.deep.equal(["realm-admin", "offline_access"]);
    expect(readClaim(keycloak, "resource_access.process-service.roles")).to.deep.equal(["admin"]);
    expect(readClaim(keycloak, "https://example.com/roles")).to.deep.equal(["auth0-admin"]);
    expect(readClaim(keycloak, "a.b")).to.equal("the whole name");
    expect(readClaim(keycloak, "realm_access.missing.roles")).to.equal(undefined);
    expect(readClaim({ list: [{ x: 1 }] }, "list.0.x"), "arrays are not walked into").to.equal(undefined);
    expect(readClaim({}, "constructor"), "only the token's own claims").to.equal(undefined);
  });

  it("reads arrays and space-separated strings, from several claims, keeping the names as they are without a map", () => {
    expect(readRoles(keycloak, claimPaths("realm_access.roles, scope"), undefined)).to.deep.equal(["realm-admin", "offline_access", "openid", "profile", "ops"]);
    expect(readRoles({ roles: ["admin", 7, null] }, ["roles"], undefined)).to.deep.equal(["admin"]);
    expect(readRoles({ roles: { admin: true } }, ["roles"], undefined), "another shape carries no role").to.deep.equal([]);
    expect(readRoles({}, ["roles"], undefined)).to.deep.equal([]);
  });

  it("maps the provider's roles to the service's, a role the map does not name counting as none", () => {
    const map = parseRoleMap("realm-admin=admin, ops=admin,ops=auditor");
    expect(readRoles(keycloak, claimPaths("realm_access.roles,scope"), map)).to.deep.equal(["admin", "auditor"]);
    expect(readRoles({ roles: ["admin"] }, ["roles"], map), "admin itself is not in the map").to.deep.equal([]);
    for (const bad of ["admin", "a=b=c", "=admin", "a b=admin", "a=", ""]) expect(parseRoleMap(bad), bad).to.equal(undefined);
  });

  it("reads the tenants from a path: an array of names or \"*\", anything else refused", () => {
    expect(readTenants({ org: { tenants: ["acme", "globex"] } }, "org.tenants")).to.deep.equal(new Set(["acme", "globex"]));
    expect(readTenants({ org: { tenants: "*" } }, "org.tenants")).to.equal("*");
    expect(readTenants({ org: {} }, "org.tenants")).to.deep.equal(new Set());
    expect(() => readTenants({ org: { tenants: "acme" } }, "org.tenants"))
      .to.throw(ProblemError)
      .with.property("message", 'the token\'s "org.tenants" claim is not valid: it must be an array of tenant names or "*"');
  });
});
