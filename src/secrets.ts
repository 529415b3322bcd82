import { inspect } from "node:util";

/** What a secret or the secret part of a URL is replaced with in any text meant for a person. */
export const REDACTED = "***";

/**
 * A secret setting (a password, a token, a client secret, a key). Its value is read only through
 * {@link Secret.reveal}, where it is handed to the library that needs it: serialised, printed,
 * inspected or interpolated, it reads `***`, so a configuration object can be logged whole
 * without leaking one.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The value itself, for the client library that sends it; never for a log line or a message. */
  reveal(): string {
    return this.#value;
  }

  /** The value as UTF-8 bytes (an HS256 key). */
  bytes(): Uint8Array {
    return new TextEncoder().encode(this.#value);
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return `Secret(${REDACTED})`;
  }
}

/** Names of query parameters whose value is a credential (`?password=…`, `?access_token=…`), compared without case, `-` or `_`. */
const SECRET_PARAMETERS = new Set(["password", "passwd", "pwd", "pass", "secret", "clientsecret", "token", "accesstoken", "refreshtoken", "idtoken", "apikey", "sslpassword", "authorization", "signature", "sig", "credential", "credentials"]);

function isSecretParameter(name: string): boolean {
  return SECRET_PARAMETERS.has(name.toLowerCase().replace(/[-_]/g, ""));
}

/**
 * A URL fit for a log line: the password of its userinfo replaced by `***`, and so is every query
 * parameter named like a credential. Text that is not a URL is answered `(unparseable)`: it may
 * hold anything.
 */
export function redactUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "(unparseable)";
  }
  if (parsed.password !== "") parsed.password = REDACTED;
  for (const name of [...parsed.searchParams.keys()]) if (isSecretParameter(name)) parsed.searchParams.set(name, REDACTED);
  // URLSearchParams would encode the asterisks.
  return parsed.toString().replace(/%2A%2A%2A/g, REDACTED);
}

/** The secret parts of a URL: the userinfo's password and the values of credential parameters. */
export function urlSecrets(url: string | undefined): string[] {
  if (url === undefined) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [url];
  }
  const found: string[] = [];
  if (parsed.password !== "") found.push(parsed.password, decodeURIComponent(parsed.password));
  for (const [name, value] of parsed.searchParams) if (isSecretParameter(name) && value !== "") found.push(value);
  return found;
}

/**
 * Every secret value held by `value` (a configuration, at any depth): each {@link Secret}, and
 * beside a `username` the pair `username:password` a basic Authorization header encodes.
 */
export function secretsIn(value: unknown, seen = new Set<unknown>()): string[] {
  if (value instanceof Secret) return [value.reveal()];
  if (value === null || typeof value !== "object" || seen.has(value)) return [];
  seen.add(value);
  const { username, password } = value as { username?: unknown; password?: unknown };
  const pair = typeof username === "string" && password instanceof Secret ? [`${username}:${password.reveal()}`] : [];
  return [...pair, ...Object.values(value).flatMap((v) => secretsIn(v, seen))];
}

/**
 * URL userinfo with a password in free text: `scheme://user:password@`, the password redacted.
 * Neither part may hold `/`, `@`, a quote or a space, so a path is never taken for it.
 */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:"'<>]*):([^\s/@"'<>]*)@/gi;

/**
 * The credentials of an Authorization header quoted in free text (an engine echoing the request it
 * refused): `Bearer` or `Basic`, then 8 or more token characters with a capital, a digit or a sign
 * among them, so prose ("Basic authentication") is left alone.
 */
const AUTHORIZATION = /\b(Bearer|Basic)(\s+)(?=[A-Za-z0-9._~+/-]*[A-Z0-9._~+/-])[A-Za-z0-9._~+/-]{8,}=*/g;

/** A JSON Web Token in free text: three base64url parts, the first two JSON objects (`eyJ`). */
const JWT = /\beyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g;

/** Query parameters named like a credential in free text (`?password=…`, `&access_token=…`). */
const QUERY_SECRET = /([?&])([A-Za-z_-]+)=([^&#\s"'<>]*)/g;

/** The forms in which a secret can reach a line: itself, JSON-escaped, URL-encoded, base64 (and base64url). */
function formsOf(secret: string): string[] {
  const forms = [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), Buffer.from(secret).toString("base64"), Buffer.from(secret).toString("base64url")];
  // base64 without its padding, as it appears inside a longer encoded text's prefix.
  forms.push(Buffer.from(secret).toString("base64").replace(/=+$/, ""));
  return forms;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Rewrites text meant for a log line or a message so that it carries no credential: every known
 * secret in each of its forms, every URL's userinfo password, every credential query parameter,
 * the credentials of a quoted `Bearer …` or `Basic …` header and every JSON Web Token (tokens
 * fetched at run time, which no setting names).
 * Secrets shorter than 4 characters are not searched for (they would blank unrelated text); they
 * are still never logged in clear through a {@link Secret}.
 */
export class Redactor {
  /** Every form of every known secret, longest first (a secret's base64 is replaced whole, not a shorter secret inside it). */
  private readonly forms: string[];
  private readonly known: RegExp | undefined;

  constructor(secrets: readonly string[] = []) {
    this.forms = [...new Set(secrets.filter((s) => s.length >= 4).flatMap(formsOf))].filter((f) => f.length >= 4);
    this.forms.sort((a, b) => b.length - a.length);
    this.known = this.forms.length === 0 ? undefined : new RegExp(this.forms.map(escapeRegExp).join("|"), "g");
  }

  /**
   * Each pattern runs only on text that can hold it (a plain `includes` first): most lines hold
   * none, and a request line is written at every request.
   */
  redact(text: string): string {
    let out = this.known !== undefined && this.forms.some((form) => text.includes(form)) ? text.replace(this.known, REDACTED) : text;
    if (out.includes("://")) out = out.replace(USERINFO, (_all, scheme: string, user: string) => `${scheme}${user}:${REDACTED}@`);
    if (out.includes("Bearer") || out.includes("Basic")) out = out.replace(AUTHORIZATION, (_all, scheme: string, space: string) => `${scheme}${space}${REDACTED}`);
    if (out.includes("eyJ")) out = out.replace(JWT, REDACTED);
    if (out.includes("=")) out = out.replace(QUERY_SECRET, (all, sep: string, name: string) => (isSecretParameter(name) ? `${sep}${name}=${REDACTED}` : all));
    return out;
  }
}
