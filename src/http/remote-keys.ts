import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwksCache, type ExportedJWKSCache, type JWKSCacheInput, type JWTVerifyGetKey } from "jose";
import type { KeySetSource } from "../config/auth.js";
import { errorText, ProblemError } from "../errors.js";
import type { Logger } from "../logger.js";

export interface RemoteKeysOptions {
  cacheMaxAgeMs: number;
  cooldownMs: number;
  timeoutMs: number;
  logger?: Logger | undefined;
}

/** The detail of the 503 answered while a token's key cannot be had from the identity provider. */
export const KEYS_UNAVAILABLE = "the identity provider's keys cannot be fetched at the moment and this token's key is not among those known; retry later";

/** The documented `detail` prefix of a refused token whose `kid` the provider's key set does not hold. */
export const UNKNOWN_KEY = "the token's key (kid) is not in the identity provider's key set";

/**
 * A provider's signing keys, fetched with jose's remote key set (`createRemoteJWKSet`) and matched
 * by `kid`:
 * - fetched at the first token, again once older than `cacheMaxAgeMs`, and at once for a `kid` it
 *   does not hold (a key rotated in) unless the last fetch is younger than `cooldownMs`;
 * - a failed fetch is not tried again before `cooldownMs` has passed (the provider is not hammered
 *   by every request during an outage); meanwhile the keys last fetched stay in use, however old;
 * - a token whose key is not among them then gets `503 UNAVAILABLE`: never accepted unverified,
 *   never a 500.
 * With an issuer (OIDC discovery), the key set's URL is the `jwks_uri` of the issuer's
 * `/.well-known/openid-configuration`, whose `issuer` must be that issuer; found once, kept.
 */
export class RemoteKeys {
  private remote: ReturnType<typeof createRemoteJWKSet> | undefined;
  /** What jose fetched last (`uat`, `jwks`): kept by jose on each successful fetch. */
  private readonly fetched: JWKSCacheInput = {};
  private matcher: { uat: number; keys: ReturnType<typeof createLocalJWKSet> } | undefined;
  private failedAt = Number.NEGATIVE_INFINITY;
  private discovery: Promise<URL> | undefined;

  constructor(
    private readonly source: KeySetSource,
    private readonly options: RemoteKeysOptions,
  ) {}

  /** jose's key resolver for `jwtVerify`. */
  readonly key: JWTVerifyGetKey = async (header, token) => {
    const remote = await this.remoteSet();
    const known = this.keys();
    if (!remote.fresh) await this.refresh(remote, known === undefined);
    const keys = this.keys()!;
    try {
      return await keys(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      // Fetched within the cooldown and not failed since: the set is current, the kid is not in it.
      if (remote.coolingDown && !this.failedSinceFetched()) throw new ProblemError("UNAUTHENTICATED", `${UNKNOWN_KEY}, fetched less than JWT_JWKS_COOLDOWN_MS ago`);
      await this.refresh(remote, true);
      try {
        return await this.keys()!(header, token);
      } catch (again) {
        if (again instanceof joseErrors.JWKSNoMatchingKey) throw new ProblemError("UNAUTHENTICATED", `${UNKNOWN_KEY}, fetched just now`);
        throw again;
      }
    }
  };

  private failedSinceFetched(): boolean {
    return this.failedAt > ((this.fetched as Partial<ExportedJWKSCache>).uat ?? Number.NEGATIVE_INFINITY);
  }

  /** The keys last fetched, as a local key set (rebuilt once per fetch). */
  private keys(): ReturnType<typeof createLocalJWKSet> | undefined {
    const { uat, jwks } = this.fetched as Partial<ExportedJWKSCache>;
    if (uat === undefined || jwks === undefined) return undefined;
    if (this.matcher?.uat !== uat) this.matcher = { uat, keys: createLocalJWKSet(jwks) };
    return this.matcher.keys;
  }

  /**
   * Fetches the key set (jose joins concurrent fetches into one). A failure is logged, and thrown as
   * a 503 when `needed` (no key to go on with); within the cooldown of a failure, nothing is fetched.
   */
  private async refresh(remote: ReturnType<typeof createRemoteJWKSet>, needed: boolean): Promise<void> {
    if (Date.now() - this.failedAt < this.options.cooldownMs) {
      if (needed) throw unavailable();
      return;
    }
    try {
      await remote.reload();
    } catch (err) {
      this.failed("the identity provider's key set could not be fetched", err);
      if (needed) throw unavailable(err);
    }
  }

  private async remoteSet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.remote !== undefined) return this.remote;
    const url = this.source.jwksUrl !== undefined ? new URL(this.source.jwksUrl) : await this.discover(this.source.oidcIssuerUrl);
    this.remote ??= createRemoteJWKSet(url, {
      cacheMaxAge: this.options.cacheMaxAgeMs,
      cooldownDuration: this.options.cooldownMs,
      timeoutDuration: this.options.timeoutMs,
      [jwksCache]: this.fetched,
    });
    return this.remote;
  }

  /** The issuer's `jwks_uri`, found once; a failure is tried again after the cooldown. */
  private discover(issuer: string): Promise<URL> {
    if (this.discovery !== undefined) return this.discovery;
    if (Date.now() - this.failedAt < this.options.cooldownMs) return Promise.reject(unavailable());
    const found = fetchDiscovery(issuer, this.options.timeoutMs).catch((err: unknown) => {
      this.failed("the identity provider's discovery document could not be read", err);
      if (this.discovery === found) this.discovery = undefined;
      throw unavailable(err);
    });
    this.discovery = found;
    return found;
  }

  private failed(message: string, err: unknown): void {
    this.failedAt = Date.now();
    // fetch() says "fetch failed"; its cause says why (ECONNREFUSED, a name not found).
    const cause = err instanceof Error && err.cause !== undefined ? `: ${errorText(err.cause)}` : "";
    this.options.logger?.warn(message, { error: `${errorText(err)}${cause}`, retryAfterMs: this.options.cooldownMs });
  }
}

function unavailable(cause?: unknown): ProblemError {
  return new ProblemError("UNAVAILABLE", KEYS_UNAVAILABLE, { cause });
}

/** Reads `<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §4). */
async function fetchDiscovery(issuer: string, timeoutMs: number): Promise<URL> {
  const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  const response = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json" } });
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
  if (document.issuer !== issuer) {
    throw new Error(`${url} names the issuer ${JSON.stringify(document.issuer)}, not OIDC_ISSUER_URL ${JSON.stringify(issuer)}`);
  }
  if (typeof document.jwks_uri !== "string" || !/^https?:$/.test(safeProtocol(document.jwks_uri))) {
    throw new Error(`${url} has no http(s) jwks_uri`);
  }
  return new URL(document.jwks_uri);
}

function safeProtocol(url: string): string {
  try {
    return new URL(url).protocol;
  } catch {
    return "";
  }
}
