import { Secret } from "../secrets.js";
import { agreed, httpUrl, integer, oneOf, pick, secretText, setting, text, withDefaults, type Given, type Group, type Values } from "./setting.js";
import { clientCredentials, strategyOf, workerSettings, type ClientCredentials, type GivenWorker, type WorkerSettings } from "./workers.js";

// Camunda 7 authentication (CAMUNDA_AUTH): names of ours, none of them the SDK's (those are Zeebe's).
export const camunda7Declarations = {
  url: setting({
    env: "CAMUNDA_URL",
    kind: httpUrl("http://localhost:8080/engine-rest"),
    absent: "not started",
    doc: "Camunda 7 REST base, e.g. `http://localhost:8080/engine-rest`: starts the external-task workers.",
    notes: "Its userinfo (`http://user:password@…`) is read as `basic` credentials and taken out of the URL.",
  }),
  auth: setting({
    env: "CAMUNDA_AUTH",
    kind: oneOf(["none", "basic", "bearer", "oauth"]),
    absent: "the strategy whose settings are given, else `none`",
    doc: "How each request to the engine is authenticated.",
    notes:
      "`basic`: `CAMUNDA_USERNAME` and `CAMUNDA_PASSWORD`; `bearer`: `CAMUNDA_TOKEN`, a static token; " +
      "`oauth`: a bearer token got with client credentials (`CAMUNDA_TOKEN_URL`, `CAMUNDA_CLIENT_ID`, `CAMUNDA_CLIENT_SECRET`).",
  }),
  username: setting({
    env: "CAMUNDA_USERNAME",
    kind: text,
    absent: "the userinfo of `CAMUNDA_URL`",
    doc: "Basic credentials: the user (`basic`, with `CAMUNDA_PASSWORD`).",
    notes: "The user and password must agree with the userinfo of `CAMUNDA_URL`, when it has one.",
  }),
  password: setting({
    env: "CAMUNDA_PASSWORD",
    kind: secretText,
    secret: "value",
    absent: "the userinfo of `CAMUNDA_URL`",
    doc: "Basic credentials: the password (`basic`, with `CAMUNDA_USERNAME`).",
  }),
  token: setting({ env: "CAMUNDA_TOKEN", kind: secretText, secret: "value", absent: "none", doc: "A static bearer token (`bearer`)." }),
  tokenUrl: setting({ env: "CAMUNDA_TOKEN_URL", kind: httpUrl(), absent: "none", doc: "OAuth 2.0 token endpoint (`oauth`, with the client's id and secret)." }),
  clientId: setting({ env: "CAMUNDA_CLIENT_ID", kind: text, absent: "none", doc: "OAuth 2.0 client id (`oauth`)." }),
  clientSecret: setting({ env: "CAMUNDA_CLIENT_SECRET", kind: secretText, secret: "value", absent: "none", doc: "OAuth 2.0 client secret (`oauth`)." }),
  clientScope: setting({ env: "CAMUNDA_CLIENT_SCOPE", kind: text, absent: "none sent", doc: "The `scope` parameter of the token request (`oauth`, optional)." }),
  clientAudience: setting({ env: "CAMUNDA_CLIENT_AUDIENCE", kind: text, absent: "none sent", doc: "The `audience` parameter of the token request (`oauth`, optional)." }),
  asyncResponseTimeoutMs: setting({
    env: "CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS",
    kind: integer(0, 600_000, "ms"),
    default: 10_000,
    doc: "Long-polling wait of one fetch; shorter than `SHUTDOWN_TIMEOUT_MS`.",
  }),
  workerId: setting({ env: "CAMUNDA_WORKER_ID", kind: text, absent: "`<host>-<pid>-<random>`", doc: "The worker id the engine sees." }),
};

export const camunda7Group: Group = { title: "Workers: Camunda 7", settings: camunda7Declarations };

/** How the Camunda 7 worker authenticates to the engine's REST API: CAMUNDA_AUTH. */
export type Camunda7Auth =
  | { kind: "none" }
  /** CAMUNDA_USERNAME and CAMUNDA_PASSWORD, or the userinfo of CAMUNDA_URL. */
  | { kind: "basic"; username: string; password: Secret }
  /** CAMUNDA_TOKEN: a static bearer token. */
  | { kind: "bearer"; token: Secret }
  /** CAMUNDA_TOKEN_URL, CAMUNDA_CLIENT_ID, CAMUNDA_CLIENT_SECRET, CAMUNDA_CLIENT_SCOPE, CAMUNDA_CLIENT_AUDIENCE: a bearer token fetched with client credentials. */
  | ({ kind: "oauth" } & ClientCredentials);

const camunda7Worker = pick(camunda7Declarations, "asyncResponseTimeoutMs", "workerId");

export interface Camunda7Settings extends WorkerSettings, Values<typeof camunda7Worker> {
  /** The REST base, without userinfo (that is read into {@link Camunda7Settings.auth}). */
  url: string;
  auth: Camunda7Auth;
}

/** Camunda 7 settings for `url`, the rest given or defaulted. */
export function camunda7Settings(url: string, given: GivenWorker<Camunda7Settings> = {}): Camunda7Settings {
  return { url, auth: given.auth ?? { kind: "none" }, ...workerSettings(given), ...withDefaults(camunda7Worker, given) };
}

/** CAMUNDA_URL (its userinfo taken out: basic credentials) and CAMUNDA_AUTH with its settings. */
export function readCamunda7Connection(e: Given<typeof camunda7Declarations>, problems: string[]): { url: string; auth: Camunda7Auth } | undefined {
  let url = e.url;
  let userinfo: { username: string | undefined; password: Secret | undefined } = { username: undefined, password: undefined };
  if (url !== undefined) {
    const parsed = new URL(url);
    if (parsed.username !== "" || parsed.password !== "") {
      const decoded = (part: string, what: string): string | undefined => {
        try {
          return decodeURIComponent(part) || undefined;
        } catch {
          problems.push(`CAMUNDA_URL: the ${what} in its userinfo is not valid percent-encoding`);
          return undefined;
        }
      };
      const password = decoded(parsed.password, "password");
      userinfo = { username: decoded(parsed.username, "user"), password: password === undefined ? undefined : new Secret(password) };
      parsed.username = "";
      parsed.password = "";
      url = parsed.toString();
    }
  }
  const username = agreed(problems, [["CAMUNDA_USERNAME", e.username], ["the user in CAMUNDA_URL", userinfo.username]]);
  const password = agreed(problems, [["CAMUNDA_PASSWORD", e.password], ["the password in CAMUNDA_URL", userinfo.password]]);
  const kind = strategyOf(problems, "CAMUNDA_AUTH", e.auth, "none", {
    basic: { needs: { CAMUNDA_USERNAME: username, CAMUNDA_PASSWORD: password } },
    bearer: { needs: { CAMUNDA_TOKEN: e.token } },
    oauth: {
      needs: { CAMUNDA_TOKEN_URL: e.tokenUrl, CAMUNDA_CLIENT_ID: e.clientId, CAMUNDA_CLIENT_SECRET: e.clientSecret },
      takes: { CAMUNDA_CLIENT_SCOPE: e.clientScope, CAMUNDA_CLIENT_AUDIENCE: e.clientAudience },
    },
  });
  if (url === undefined || kind === undefined) return undefined;
  switch (kind) {
    case "none":
      return { url, auth: { kind } };
    case "basic":
      return { url, auth: { kind, username: username!, password: password! } };
    case "bearer":
      return { url, auth: { kind, token: e.token! } };
    case "oauth":
      return { url, auth: { kind, ...clientCredentials(e.tokenUrl!, e.clientId!, e.clientSecret!, e.clientAudience, e.clientScope) } };
  }
}
