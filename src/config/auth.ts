import { createPublicKey, type KeyObject } from "node:crypto";
import { Secret } from "../secrets.js";
import { parseRoleMap, type RoleMap } from "./role-map.js";
import { checkedText, flag, httpUrl, integer, secretText, setting, text, withDefaults, type Given, type Group, type Kind, type Values } from "./setting.js";

/** The signing algorithms a key set (JWKS) may be used with: asymmetric only, so never `none` nor a shared secret. */
export const KEY_SET_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"] as const;
export type KeySetAlgorithm = (typeof KEY_SET_ALGORITHMS)[number];

/** A comma-separated list of {@link KEY_SET_ALGORITHMS}. */
const algorithmList: Kind<KeySetAlgorithm[]> = {
  schema: (name) =>
    checkedText(
      (v) => v.split(",").every((a) => (KEY_SET_ALGORITHMS as readonly string[]).includes(a.trim())),
      `must be a comma-separated list of ${KEY_SET_ALGORITHMS.join(", ")}`,
      "",
    )
      .schema(name)
      .transform((v) => (v === undefined ? undefined : [...new Set(v.split(",").map((a) => a.trim() as KeySetAlgorithm))])),
  allowed: "comma-separated: `RS256`–`RS512`, `PS256`–`PS512`, `ES256`–`ES512`, `EdDSA`, `Ed25519`",
  show: (list) => `\`${list.join(",")}\``,
};

/** `provider-role=our-role` pairs, comma-separated. */
const roleMap: Kind<RoleMap> = {
  schema: (name) =>
    checkedText((v) => parseRoleMap(v) !== undefined, "must be a comma-separated list of provider-role=role pairs, like realm-admin=admin,ops=admin", "")
      .schema(name)
      .transform((v) => (v === undefined ? undefined : parseRoleMap(v))),
  allowed: "`provider-role=role` pairs, comma-separated",
};

const claimPathNotes =
  "A claim path names a claim of the token: the claim of exactly that name when the token has one " +
  "(`https://example.com/roles`, a name holding dots), else the path split on its dots, one object level each " +
  "(`realm_access.roles`). See [identity providers](../how-to/identity.md#claim-paths).";

export const authSettings = {
  secret: setting({
    env: "JWT_SECRET",
    kind: secretText,
    secret: "value",
    absent: "one way to check tokens is required unless `AUTH_DISABLED=true`",
    doc: "HS256 key of the tokens, at least 32 bytes.",
  }),
  publicKey: setting({
    env: "JWT_PUBLIC_KEY",
    kind: text,
    absent: "none",
    doc: "PEM public key of the tokens: RSA → RS256, P-256 → ES256 (`\\n` escapes accepted).",
  }),
  jwksUrl: setting({
    env: "JWT_JWKS_URL",
    kind: httpUrl("https://login.example.com/.well-known/jwks.json"),
    absent: "none",
    doc: "URL of the identity provider's key set (JWKS); a token's key is found by its `kid`.",
  }),
  oidcIssuerUrl: setting({
    env: "OIDC_ISSUER_URL",
    kind: httpUrl("https://keycloak.example.com/realms/main"),
    absent: "none",
    doc: "OpenID Connect issuer: its key set is found by discovery; tokens must carry it as `iss`.",
  }),
  algorithms: setting({
    env: "JWT_ALGORITHMS",
    kind: algorithmList,
    default: ["RS256", "PS256", "ES256", "EdDSA"],
    doc: "Algorithms accepted with a key set (JWKS, OIDC).",
  }),
  jwksCacheMaxAgeMs: setting({
    env: "JWT_JWKS_CACHE_MAX_AGE_MS",
    kind: integer(1_000, 86_400_000, "ms"),
    default: 600_000,
    doc: "Age after which the key set is fetched again (kept in use while that fails).",
  }),
  jwksCooldownMs: setting({
    env: "JWT_JWKS_COOLDOWN_MS",
    kind: integer(0, 3_600_000, "ms"),
    default: 30_000,
    doc: "Least time between fetches for an unknown `kid`, and after a failed fetch.",
  }),
  jwksTimeoutMs: setting({ env: "JWT_JWKS_TIMEOUT_MS", kind: integer(100, 60_000, "ms"), default: 5_000, doc: "Time-out of a fetch of the key set or discovery document." }),
  userClaim: setting({ env: "JWT_USER_CLAIM", kind: text, default: "sub", doc: "Claim holding the user id (`${userId}`)." }),
  issuer: setting({ env: "JWT_ISSUER", kind: text, absent: "not checked (`OIDC_ISSUER_URL` when set)", doc: "When set, tokens must carry this `iss`." }),
  audience: setting({ env: "JWT_AUDIENCE", kind: text, absent: "not checked", doc: "When set, tokens must carry this `aud`." }),
  rolesClaim: setting({
    env: "JWT_ROLES_CLAIM",
    kind: text,
    default: "roles",
    doc: "Claim paths (comma-separated) of the roles: arrays, or space-separated names (`scope`).",
    notes: claimPathNotes,
  }),
  roleMap: setting({
    env: "JWT_ROLE_MAP",
    kind: roleMap,
    absent: "names kept as they are",
    doc: "Provider roles mapped to ours (`realm-admin=admin,ops=admin`); others count as none.",
  }),
  tenantsClaim: setting({
    env: "JWT_TENANTS_CLAIM",
    kind: text,
    default: "tenants",
    doc: 'Claim path naming the tenants a token may act in: an array of tenant names, or `"*"`.',
  }),
  clockSkewSeconds: setting({ env: "JWT_CLOCK_SKEW_SECONDS", kind: integer(0, 300, "s"), default: 5, doc: "Leeway for the token's `exp`, `nbf` and `iat`." }),
  disabled: setting({
    env: "AUTH_DISABLED",
    kind: flag,
    default: false,
    doc: "`true`: every request is an admin of every tenant (development only; logged as a warning at start).",
  }),
};

export const authGroup: Group = {
  title: "Authentication",
  about:
    "How the REST API checks bearer tokens: with one of `JWT_SECRET`, `JWT_PUBLIC_KEY`, `JWT_JWKS_URL`, `OIDC_ISSUER_URL` " +
    "([identity providers](../how-to/identity.md)). The workers alone (`npm run worker`) serve no API and need no key.",
  settings: authSettings,
};

type AuthValues = Values<typeof authSettings>;

/** Where the keys of a provider's tokens come from: its key set, or its discovery document naming the key set. */
export type KeySetSource = { jwksUrl: string; oidcIssuerUrl?: undefined } | { jwksUrl?: undefined; oidcIssuerUrl: string };

export type TokenKey =
  | { kind: "secret"; secret: Secret }
  | { kind: "public"; key: KeyObject; algorithm: "RS256" | "ES256" }
  | ({ kind: "remote"; algorithms: KeySetAlgorithm[]; cacheMaxAgeMs: number; cooldownMs: number; timeoutMs: number } & KeySetSource);

export type AuthConfig =
  | ({ disabled: true } & Pick<AuthValues, "userClaim">)
  | ({
      disabled: false;
      /** HS256 shared secret, the public key (RS256 for RSA keys, ES256 for EC keys), or a provider's key set. */
      key: TokenKey;
    } & Pick<AuthValues, "userClaim" | "issuer" | "audience" | "rolesClaim" | "roleMap" | "tenantsClaim" | "clockSkewSeconds">);

/** The way tokens are checked: a key (one of four ways), or none at all (AUTH_DISABLED). */
export function readAuth(given: Given<typeof authSettings>, problems: string[]): AuthConfig | undefined {
  const e = withDefaults(authSettings, given);
  if (e.disabled) return { disabled: true, userClaim: e.userClaim };
  const ways = [
    ["JWT_SECRET", e.secret],
    ["JWT_PUBLIC_KEY", e.publicKey],
    ["JWT_JWKS_URL or OIDC_ISSUER_URL", e.jwksUrl ?? e.oidcIssuerUrl],
  ].filter(([, v]) => v !== undefined);
  if (ways.length > 1) {
    problems.push(`${ways.map(([name]) => name).join(" and ")} are both set: choose one way to check tokens`);
    return undefined;
  }
  if (given.algorithms !== undefined && e.jwksUrl === undefined && e.oidcIssuerUrl === undefined) {
    problems.push("JWT_ALGORITHMS applies to a key set only: set JWT_JWKS_URL or OIDC_ISSUER_URL, or leave it out");
    return undefined;
  }
  // The issuer a provider's discovery document names is the one its tokens carry.
  if (e.oidcIssuerUrl !== undefined && e.issuer !== undefined && e.issuer !== e.oidcIssuerUrl) {
    problems.push("JWT_ISSUER and OIDC_ISSUER_URL disagree: the issuer is OIDC_ISSUER_URL, leave JWT_ISSUER out");
    return undefined;
  }
  const common = {
    disabled: false as const,
    userClaim: e.userClaim,
    issuer: e.issuer ?? e.oidcIssuerUrl,
    audience: e.audience,
    rolesClaim: e.rolesClaim,
    roleMap: e.roleMap,
    tenantsClaim: e.tenantsClaim,
    clockSkewSeconds: e.clockSkewSeconds,
  };
  if (e.jwksUrl !== undefined || e.oidcIssuerUrl !== undefined) {
    const timing = { algorithms: e.algorithms, cacheMaxAgeMs: e.jwksCacheMaxAgeMs, cooldownMs: e.jwksCooldownMs, timeoutMs: e.jwksTimeoutMs };
    // A key set given with an issuer is used as given: no discovery needed.
    const source: KeySetSource = e.jwksUrl !== undefined ? { jwksUrl: e.jwksUrl } : { oidcIssuerUrl: e.oidcIssuerUrl! };
    return { ...common, key: { kind: "remote", ...timing, ...source } };
  }
  if (e.secret !== undefined) {
    if (e.secret.bytes().length < 32) {
      problems.push("JWT_SECRET must be at least 32 bytes long (HS256 needs a 256-bit key)");
      return undefined;
    }
    return { ...common, key: { kind: "secret", secret: e.secret } };
  }
  if (e.publicKey !== undefined) {
    let key: KeyObject;
    try {
      // A PEM passed through an environment variable often has its line breaks escaped.
      key = createPublicKey(e.publicKey.replace(/\\n/g, "\n"));
    } catch {
      problems.push("JWT_PUBLIC_KEY is not a PEM public key");
      return undefined;
    }
    if (key.asymmetricKeyType === "rsa") return { ...common, key: { kind: "public", key, algorithm: "RS256" } };
    if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") {
      return { ...common, key: { kind: "public", key, algorithm: "ES256" } };
    }
    problems.push("JWT_PUBLIC_KEY must be an RSA key (RS256) or a P-256 EC key (ES256)");
    return undefined;
  }
  problems.push("none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL and OIDC_ISSUER_URL is set; set one, or AUTH_DISABLED=true for development only");
  return undefined;
}
