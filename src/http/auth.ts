import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyOptions } from "jose";
import { LRUCache } from "lru-cache";
import type { AuthConfig } from "../config.js";
import { ProblemError } from "../errors.js";

/** Who is calling, as the verified token says. */
export interface Principal {
  /** The configured user claim (default `sub`); undefined when the token has none. */
  userId: string | undefined;
  /** The token's `name` claim (else `preferred_username`), when it is a string: shown beside the user id in definition histories. */
  name?: string | undefined;
  /** The `roles` claim, when it is an array of strings. The roles apply within {@link tenants} only. */
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
 * Verifies `Authorization: Bearer <JWT>` with jose. Only the one algorithm the configured key is
 * for is accepted, so `alg: none` and algorithm confusion (an HS256 token signed with a public
 * key) fail like a bad signature.
 */
export function createAuthenticator(auth: AuthConfig, verifiedTokensKept = 10_000): Authenticator {
  if (auth.disabled) return async () => developmentPrincipal;
  const verifyKey = auth.key.kind === "secret" ? auth.key.secret.bytes() : auth.key.key;
  const options: JWTVerifyOptions = {
    algorithms: [auth.key.kind === "secret" ? "HS256" : auth.key.algorithm],
    clockTolerance: auth.clockSkewSeconds,
    requiredClaims: ["exp"],
  };
  if (auth.issuer !== undefined) options.issuer = auth.issuer;
  if (auth.audience !== undefined) options.audience = auth.audience;

  const verified = new VerifiedTokens(verifiedTokensKept);
  return async (authorization) => {
    const token = bearerToken(authorization);
    const known = verified.get(token);
    if (known !== undefined) return known;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, verifyKey, options));
    } catch (err) {
      throw new ProblemError("UNAUTHENTICATED", reasonRejected(err));
    }
    // jose checks iat only against a maximum age; a token issued in the future is refused here.
    if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + auth.clockSkewSeconds) {
      throw new ProblemError("UNAUTHENTICATED", `the token's "iat" claim is not valid: it lies in the future`);
    }
    const user = payload[auth.userClaim];
    const roles = Array.isArray(payload.roles) ? payload.roles.filter((r): r is string => typeof r === "string") : [];
    const tenants = readTenants(payload[auth.tenantsClaim], auth.tenantsClaim);
    const expiresAtMs = (payload.exp! + auth.clockSkewSeconds) * 1000;
    const name = [payload.name, payload.preferred_username].find((n): n is string => typeof n === "string");
    const userId = typeof user === "string" || typeof user === "number" ? String(user) : undefined;
    const principal: Principal = Object.freeze({ userId, name, roles: Object.freeze(roles) as string[], tenants, expiresAtMs });
    verified.add(token, principal);
    return principal;
  };
}

/**
 * Tokens verified before, with what they said, until they expire. The key is configured once and
 * never changes in a running process, so a token that verified once verifies again until its `exp`
 * (plus the clock skew) — `nbf` and `iat` lie behind once it has verified. Verifying a signature
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

/**
 * The tenants claim: an array of tenant names (`"*"` among them means every tenant), or `"*"`.
 * Absent, it names no tenant. Any other shape is a token this service cannot read: refused as
 * unauthenticated rather than guessed at.
 */
function readTenants(claim: unknown, name: string): "*" | ReadonlySet<string> {
  if (claim === undefined) return new Set();
  if (claim === "*") return "*";
  if (Array.isArray(claim) && claim.every((t): t is string => typeof t === "string")) {
    return claim.includes("*") ? "*" : new Set(claim);
  }
  throw new ProblemError("UNAUTHENTICATED", `the token's "${name}" claim is not valid: it must be an array of tenant names or "*"`);
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
