import type { KeyObject } from "node:crypto";
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from "jose";
import { LRUCache } from "lru-cache";
import type { AuthConfig } from "../config.js";
import { ProblemError } from "../errors.js";
import type { Logger } from "../logger.js";
import { claimPaths, readRoles, readTenants } from "./claims.js";
import { RemoteKeys } from "./remote-keys.js";

/** Who is calling, as the verified token says. */
export interface Principal {
  /** The configured user claim (default `sub`); undefined when the token has none. */
  userId: string | undefined;
  /** The token's `name` claim (else `preferred_username`), when it is a string: shown beside the user id in definition histories. */
  name?: string | undefined;
  /**
   * The roles of the roles claims (JWT_ROLES_CLAIM, default `roles`), through JWT_ROLE_MAP when set.
   * The roles apply within {@link tenants} only.
   */
  roles: string[];
  /** The tenants the token may act in (the configured tenants claim): `"*"` for every tenant. */
  tenants: "*" | ReadonlySet<string>;
  /**
   * When the token stops being accepted: its `exp` plus the clock skew, in epoch milliseconds
   * (a live stream is closed then). Undefined when auth is disabled.
   */
  expiresAtMs: number | undefined;
}

export type Authenticator = (authorization: string | undefined) => Promise<Principal>;

/** The principal every request gets when auth is disabled (development only). */
export const developmentPrincipal: Principal = { userId: "developer", roles: ["admin"], tenants: "*", expiresAtMs: undefined };

/** Whether the principal may act in `tenant` (contract §9). */
export function mayActIn(principal: Principal, tenant: string): boolean {
  return principal.tenants === "*" || principal.tenants.has(tenant);
}

/**
 * Verifies `Authorization: Bearer <JWT>` with jose: with the HS256 secret, the PEM public key, or the
 * identity provider's key set (JWKS, by `kid`). Only the algorithms of the configured key are
 * accepted, so `alg: none` and algorithm confusion (an HS256 token signed with a public key) fail
 * like a bad signature. REST, the streams' first message and their renewals all verify here.
 */
export function createAuthenticator(auth: AuthConfig, verifiedTokensKept = 10_000, logger?: Logger): Authenticator {
  if (auth.disabled) return async () => developmentPrincipal;
  const { key, algorithms } = verification(auth.key, logger);
  const options: JWTVerifyOptions = { algorithms, clockTolerance: auth.clockSkewSeconds, requiredClaims: ["exp"] };
  if (auth.issuer !== undefined) options.issuer = auth.issuer;
  if (auth.audience !== undefined) options.audience = auth.audience;
  const rolesClaims = claimPaths(auth.rolesClaim);

  const verified = new VerifiedTokens(verifiedTokensKept);
  return async (authorization) => {
    const token = bearerToken(authorization);
    const known = verified.get(token);
    if (known !== undefined) return known;
    let payload: JWTPayload;
    try {
      ({ payload } = await (typeof key === "function" ? jwtVerify(token, key, options) : jwtVerify(token, key, options)));
    } catch (err) {
      // A key set's own answer: a 503 while the provider cannot be reached, a 401 for an unknown kid.
      if (err instanceof ProblemError) throw err;
      throw new ProblemError("UNAUTHENTICATED", reasonRejected(err));
    }
    // jose checks iat only against a maximum age; a token issued in the future is refused here.
    if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + auth.clockSkewSeconds) {
      throw new ProblemError("UNAUTHENTICATED", `the token's "iat" claim is not valid: it lies in the future`);
    }
    const user = payload[auth.userClaim];
    const roles = readRoles(payload, rolesClaims, auth.roleMap);
    const tenants = readTenants(payload, auth.tenantsClaim);
    const expiresAtMs = (payload.exp! + auth.clockSkewSeconds) * 1000;
    const name = [payload.name, payload.preferred_username].find((n): n is string => typeof n === "string");
    const userId = typeof user === "string" || typeof user === "number" ? String(user) : undefined;
    const principal: Principal = Object.freeze({ userId, name, roles: Object.freeze(roles) as string[], tenants, expiresAtMs });
    verified.add(token, principal);
    return principal;
  };
}

/** The key (or a provider's key resolver) and the algorithms it may be used with. */
function verification(key: Extract<AuthConfig, { disabled: false }>["key"], logger: Logger | undefined): { key: Uint8Array | KeyObject | JWTVerifyGetKey; algorithms: string[] } {
  if (key.kind === "secret") return { key: key.secret.bytes(), algorithms: ["HS256"] };
  if (key.kind === "public") return { key: key.key, algorithms: [key.algorithm] };
  const remote = new RemoteKeys(key, { cacheMaxAgeMs: key.cacheMaxAgeMs, cooldownMs: key.cooldownMs, timeoutMs: key.timeoutMs, logger });
  return { key: remote.key, algorithms: key.algorithms };
}

/**
 * Tokens verified before, with what they said, until they expire. A key once used to verify is
 * trusted until the token's `exp` (plus the clock skew) — a provider's key rotated out does not
 * revoke the tokens it signed — and `nbf` and `iat` lie behind once it has verified. Verifying a signature
 * was a tenth of a request's CPU (profiled under load). Only accepted tokens are kept, at most
 * `capacity` (a few MB of tokens), the least recently used dropped first.
 */
class VerifiedTokens {
  private readonly tokens: LRUCache<string, Principal>;

  constructor(capacity: number) {
    // `exp` is a wall-clock instant, the one jose checks against: entries age on the same clock,
    // read at every look-up.
    this.tokens = new LRUCache({ max: capacity, perf: Date, ttlResolution: 0 });
  }

  get(token: string): Principal | undefined {
    return this.tokens.get(token);
  }

  /** `principal.expiresAtMs` is set: only verified tokens are added. */
  add(token: string, principal: Principal): void {
    // Kept while Date.now() < expiresAtMs: an entry is stale once now - start > ttl. A ttl of 0
    // would mean "forever", so a token within a millisecond of its end is not kept at all.
    const start = Date.now();
    const ttl = Math.ceil(principal.expiresAtMs!) - 1 - start;
    if (ttl > 0) this.tokens.set(token, principal, { ttl, start });
  }
}

function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === "") {
    throw new ProblemError("UNAUTHENTICATED", "the Authorization header is missing; send Authorization: Bearer <token>");
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match?.[1] === undefined) {
    throw new ProblemError("UNAUTHENTICATED", "the Authorization header must have the form Bearer <token>");
  }
  return match[1];
}

/** Says why a token was refused without echoing the token or anything secret. */
function reasonRejected(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return "the token has expired";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return "the token's signing algorithm is not accepted";
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "the token's signature is not valid";
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `the token's "${err.claim}" claim is not valid: ${err.reason}`;
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid || err instanceof joseErrors.JOSENotSupported) {
    return "the token is not a well-formed signed JWT";
  }
  return "the token could not be verified";
}
