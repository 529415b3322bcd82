import { BasicAuthInterceptor, type Interceptor } from "camunda-external-task-client-js";
import type { Camunda7Auth, ClientCredentials } from "../../src/config.js";
import { Redactor, redactUrl } from "../../src/secrets.js";
import { errorText } from "../../src/errors.js";

/**
 * How the worker authenticates to the Camunda 7 REST API (CAMUNDA_AUTH): an interceptor of
 * camunda-external-task-client-js for the client's requests, and the same header for the
 * worker's own (the readiness check).
 */
export interface EngineAuthorization {
  /** The client's interceptors (none when the engine needs no authentication). */
  interceptors: Interceptor[];
  /** The `Authorization` header value for a request of the worker's own; undefined: none. */
  header(): Promise<string | undefined>;
}

export function engineAuthorization(auth: Camunda7Auth, now: () => number = Date.now): EngineAuthorization {
  switch (auth.kind) {
    case "none":
      return { interceptors: [], header: () => Promise.resolve(undefined) };
    case "basic": {
      // The library's own interceptor; the header of the worker's own requests is the same.
      const interceptor = new BasicAuthInterceptor({ username: auth.username, password: auth.password.reveal() });
      const header = `Basic ${Buffer.from(`${auth.username}:${auth.password.reveal()}`).toString("base64")}`;
      return { interceptors: [interceptor], header: () => Promise.resolve(header) };
    }
    case "bearer": {
      const header = `Bearer ${auth.token.reveal()}`;
      return { interceptors: [(config) => ({ ...config, headers: { ...config.headers, Authorization: header } })], header: () => Promise.resolve(header) };
    }
    case "oauth": {
      const tokens = new ClientCredentialsToken(auth, now);
      // An interceptor is synchronous: the token (which may have to be fetched) is set by a `got`
      // beforeRequest hook, the way the library's docs show for asynchronous work. A 401 drops
      // the token kept, so the next request asks for a fresh one (a token revoked early).
      const interceptor: Interceptor = (config) => ({
        ...config,
        hooks: {
          ...config.hooks,
          beforeRequest: [
            ...(config.hooks?.beforeRequest ?? []),
            async (options: { headers: Record<string, string | string[] | undefined> }) => {
              options.headers = { ...options.headers, Authorization: `Bearer ${await tokens.get()}` };
            },
          ],
          afterResponse: [
            ...(config.hooks?.afterResponse ?? []),
            (response: { statusCode: number }) => {
              if (response.statusCode === 401) tokens.invalidate();
              return response;
            },
          ],
        },
      });
      return { interceptors: [interceptor], header: async () => `Bearer ${await tokens.get()}` };
    }
  }
}

/** The longest a token request may take. */
const TOKEN_REQUEST_TIMEOUT_MS = 10_000;

/** A token is renewed when this share of its lifetime is left … */
const RENEW_SHARE = 0.25;
/** … or this much, whichever is less. */
const RENEW_MARGIN_MS = 60_000;

/**
 * An OAuth 2.0 access token got with client credentials (RFC 6749 §4.4: `grant_type=client_credentials`,
 * the client's id and secret in the form body, as @camunda8/sdk sends them to Camunda Identity,
 * `audience` and `scope` when configured). It is kept and handed out until a quarter of its
 * lifetime (at most a minute) is left, then the next request asks for a new one, so a request
 * never goes out with a token about to expire. Callers at the same moment share one token request.
 * A token answered without `expires_in` is kept until the engine refuses it (401).
 */
export class ClientCredentialsToken {
  private current: { token: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(
    private readonly credentials: ClientCredentials,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<string> {
    if (this.current !== undefined && this.now() < this.current.renewAt) return Promise.resolve(this.current.token);
    this.pending ??= this.request().finally(() => (this.pending = undefined));
    return this.pending;
  }

  /** Forgets the token kept (the engine refused it). */
  invalidate(): void {
    this.current = undefined;
  }

  private async request(): Promise<string> {
    const { url, clientId, clientSecret, audience, scope } = this.credentials;
    const body = new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret.reveal() });
    if (audience !== undefined) body.set("audience", audience);
    if (scope !== undefined) body.set("scope", scope);
    const asked = this.now();
    const where = redactUrl(url);
    let res: Response;
    try {
      res = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" }, body, signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS) });
    } catch (err) {
      // fetch quotes the URL it refused (one with userinfo, say): the message is redacted.
      const reason = new Redactor([clientSecret.reveal()]).redact(errorText(err));
      // No cause attached: it quotes the URL in clear.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`the token endpoint ${where} could not be reached: ${reason}`);
    }
    // The answer's body is not quoted: an endpoint may echo what it was sent.
    if (!res.ok) throw new Error(`the token endpoint ${where} answered ${res.status}`);
    const answer = (await res.json().catch(() => undefined)) as { access_token?: unknown; expires_in?: unknown } | undefined;
    if (typeof answer?.access_token !== "string" || answer.access_token === "") throw new Error(`the token endpoint ${where} answered no access_token`);
    const lifetimeMs = typeof answer.expires_in === "number" && answer.expires_in > 0 ? answer.expires_in * 1000 : undefined;
    const renewAt = lifetimeMs === undefined ? Number.POSITIVE_INFINITY : asked + lifetimeMs - Math.min(lifetimeMs * RENEW_SHARE, RENEW_MARGIN_MS);
    this.current = { token: answer.access_token, renewAt };
    return answer.access_token;
  }
}
