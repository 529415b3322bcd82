import { createPublicKey, type KeyObject } from "node:crypto";
import { Secret } from "../secrets.js";
import { flag, integer, secretText, setting, text, withDefaults, type Given, type Group, type Values } from "./setting.js";

export const authSettings = {
  secret: setting({
    env: "JWT_SECRET",
    kind: secretText,
    secret: "value",
    absent: "one of `JWT_SECRET` and `JWT_PUBLIC_KEY` is required unless `AUTH_DISABLED=true`",
    doc: "HS256 key of the tokens, at least 32 bytes.",
  }),
  publicKey: setting({
    env: "JWT_PUBLIC_KEY",
    kind: text,
    absent: "none",
    doc: "PEM public key of the tokens: RSA → RS256, P-256 → ES256 (`\\n` escapes accepted).",
  }),
  userClaim: setting({ env: "JWT_USER_CLAIM", kind: text, default: "sub", doc: "Claim holding the user id (`${userId}`)." }),
  issuer: setting({ env: "JWT_ISSUER", kind: text, absent: "not checked", doc: "When set, tokens must carry this `iss`." }),
  audience: setting({ env: "JWT_AUDIENCE", kind: text, absent: "not checked", doc: "When set, tokens must carry this `aud`." }),
  tenantsClaim: setting({
    env: "JWT_TENANTS_CLAIM",
    kind: text,
    default: "tenants",
    doc: 'Claim naming the tenants a token may act in: an array of tenant names, or `"*"`.',
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
  about: "How the REST API checks bearer tokens. The workers alone (`npm run worker`) serve no API and need no key.",
  settings: authSettings,
};

type AuthValues = Values<typeof authSettings>;

export type AuthConfig =
  | ({ disabled: true } & Pick<AuthValues, "userClaim">)
  | ({
      disabled: false;
      /** HS256 shared secret, or the public key (RS256 for RSA keys, ES256 for EC keys). */
      key: { kind: "secret"; secret: Secret } | { kind: "public"; key: KeyObject; algorithm: "RS256" | "ES256" };
    } & Pick<AuthValues, "userClaim" | "issuer" | "audience" | "tenantsClaim" | "clockSkewSeconds">);

/** The way tokens are checked: a key (one of two), or none at all (AUTH_DISABLED). */
export function readAuth(given: Given<typeof authSettings>, problems: string[]): AuthConfig | undefined {
  const e = withDefaults(authSettings, given);
  if (e.disabled) return { disabled: true, userClaim: e.userClaim };
  if (e.secret !== undefined && e.publicKey !== undefined) {
    problems.push("JWT_SECRET and JWT_PUBLIC_KEY are both set: choose one");
    return undefined;
  }
  const common = { disabled: false as const, userClaim: e.userClaim, issuer: e.issuer, audience: e.audience, tenantsClaim: e.tenantsClaim, clockSkewSeconds: e.clockSkewSeconds };
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
  problems.push("neither JWT_SECRET nor JWT_PUBLIC_KEY is set; set one, or AUTH_DISABLED=true for development only");
  return undefined;
}
