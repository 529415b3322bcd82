import type { JWTPayload } from "jose";
import type { RoleMap } from "../config/role-map.js";
import { ProblemError } from "../errors.js";

/**
 * A claim path (JWT_ROLES_CLAIM, JWT_TENANTS_CLAIM): the top-level claim of exactly that name when
 * the token has one — a namespaced claim (`https://example.com/roles`) or any name holding dots —
 * else the path split on its dots, one object level each (`realm_access.roles`,
 * `resource_access.my-client.roles`). Undefined when a level is missing or not an object.
 */
export function readClaim(payload: JWTPayload, path: string): unknown {
  if (Object.hasOwn(payload, path)) return payload[path];
  let value: unknown = payload;
  for (const name of path.split(".")) {
    if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** The paths of a comma-separated JWT_ROLES_CLAIM. */
export function claimPaths(setting: string): string[] {
  return setting
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/**
 * The roles a token carries: from each roles claim, an array (its strings) or a string of
 * space-separated names (an OAuth `scope`); any other shape, or no claim, carries none. With a role
 * map, each provider role becomes the service's roles it maps to, and a role it does not name counts
 * as none.
 */
export function readRoles(payload: JWTPayload, paths: readonly string[], map: RoleMap | undefined): string[] {
  const given = new Set<string>();
  for (const path of paths) {
    const claim = readClaim(payload, path);
    const names = typeof claim === "string" ? claim.split(/\s+/) : Array.isArray(claim) ? claim.filter((r): r is string => typeof r === "string") : [];
    for (const name of names) if (name !== "") given.add(name);
  }
  if (map === undefined) return [...given];
  const roles = new Set<string>();
  for (const name of given) for (const role of map.get(name) ?? []) roles.add(role);
  return [...roles];
}

/**
 * The tenants claim: an array of tenant names (`"*"` among them means every tenant), or `"*"`.
 * Absent, it names no tenant. Any other shape is a token this service cannot read: refused as
 * unauthenticated rather than guessed at.
 */
export function readTenants(payload: JWTPayload, path: string): "*" | ReadonlySet<string> {
  const claim = readClaim(payload, path);
  if (claim === undefined) return new Set();
  if (claim === "*") return "*";
  if (Array.isArray(claim) && claim.every((t): t is string => typeof t === "string")) {
    return claim.includes("*") ? "*" : new Set(claim);
  }
  throw new ProblemError("UNAUTHENTICATED", `the token's "${path}" claim is not valid: it must be an array of tenant names or "*"`);
}
