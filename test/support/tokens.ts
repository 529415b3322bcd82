import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { SignJWT, type JWTPayload } from "jose";

/** The HS256 secret the test servers are configured with. */
export const TEST_JWT_SECRET = "test-secret-that-is-at-least-32-bytes-long";

export interface TokenOptions {
  roles?: string[];
  sub?: string;
  /** `exp`: a duration or an epoch second; `null` leaves it out. Default 10 minutes. */
  expiresIn?: string | number | null;
  /** The `tenants` claim; `null` leaves it out. Default `"*"` (every tenant). */
  tenants?: string[] | "*" | null;
  claims?: JWTPayload;
}

/** A real HS256 token signed with {@link TEST_JWT_SECRET} (or another secret). */
export async function hsToken(options: TokenOptions = {}, secret = TEST_JWT_SECRET): Promise<string> {
  return sign(new TextEncoder().encode(secret), "HS256", options);
}

export async function sign(key: Uint8Array | KeyObject, alg: string, options: TokenOptions = {}): Promise<string> {
  const tenants = options.tenants === undefined ? "*" : options.tenants;
  const jwt = new SignJWT({ roles: options.roles ?? [], ...(tenants === null ? {} : { tenants }), ...options.claims })
    .setProtectedHeader({ alg, typ: "JWT" })
    .setSubject(options.sub ?? "user-1");
  // An `iat` given in `claims` stands; otherwise the token is issued now.
  if (options.claims?.iat === undefined) jwt.setIssuedAt();
  if (options.expiresIn !== null) jwt.setExpirationTime(options.expiresIn ?? "10m");
  return jwt.sign(key);
}

export const adminToken = (sub = "admin-1") => hsToken({ roles: ["admin"], sub });
export const userToken = (sub = "user-1") => hsToken({ roles: [], sub });

/** An unsigned token (`alg: none`), hand-made since no library signs one. */
export function unsignedToken(payload: JWTPayload): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${part({ alg: "none", typ: "JWT" })}.${part(payload)}.`;
}

export function rsaKeyPair(): { privateKey: KeyObject; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { privateKey, publicPem: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

export function ecKeyPair(): { privateKey: KeyObject; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { privateKey, publicPem: publicKey.export({ type: "spki", format: "pem" }).toString() };
}
