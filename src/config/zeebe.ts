import { z } from "zod";
import type { Secret } from "../secrets.js";
import {
  checkedText,
  flag,
  httpUrl,
  integer,
  oneOf,
  pick,
  readableFile,
  secretText,
  setting,
  text,
  withDefaults,
  type Given,
  type Group,
  type Kind,
  type Values,
} from "./setting.js";
import { clientCredentials, strategyOf, workerSettings, type ClientCredentials, type GivenWorker, type WorkerSettings } from "./workers.js";

/** A gateway address: `host:port`. */
const HOST_PORT = /^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/;
/** The SDK's form: `grpc://host:port` or `grpcs://host:port` (or `host:port`, its legacy form). */
const GRPC_ADDRESS = /^(?:(grpcs?):\/\/)?([A-Za-z0-9.\-[\]:]+:\d{1,5})\/?$/;

/** ZEEBE_ADDRESS: `host:port`, compared and kept in lower case. */
const hostPort: Kind<string> = {
  schema: (name) => checkedText((v) => HOST_PORT.test(v), "must be host:port, like localhost:26500", "").schema(name).transform((v) => v?.toLowerCase()),
  allowed: "`host:port`",
};

/** ZEEBE_GRPC_ADDRESS read as the gateway's address: its `host:port`. */
const grpcAddress: Kind<string> = {
  schema: (name) =>
    checkedText((v) => GRPC_ADDRESS.test(v), "must be grpc://host:port (plaintext) or grpcs://host:port (TLS), like grpc://localhost:26500", "")
      .schema(name)
      .transform((v) => (v === undefined ? undefined : GRPC_ADDRESS.exec(v)?.[2]?.toLowerCase())),
  allowed: "`grpc://host:port` (plaintext) or `grpcs://host:port` (TLS)",
};

/** ZEEBE_GRPC_ADDRESS read as TLS or not: `grpcs://` is, `grpc://` is not, no scheme says nothing (its form is checked as an address). */
const grpcScheme: Kind<boolean> = {
  schema: () =>
    z
      .string()
      .optional()
      .transform((v) => {
        const scheme = v === undefined ? undefined : GRPC_ADDRESS.exec(v.trim())?.[1];
        return scheme === undefined ? undefined : scheme === "grpcs";
      }),
  allowed: "",
};

/**
 * A comma-separated list of Zeebe tenant ids (each `<default>` or 1–31 of `A-Z a-z 0-9 _ - .`,
 * Zeebe's rule); blank or absent: none given.
 */
const tenantIdList: Kind<string[]> = {
  schema: (name) =>
    text
      .schema(name)
      .transform((s) => s?.split(",").map((id) => id.trim()))
      .refine(
        (ids) => ids === undefined || ids.every((id) => id === "<default>" || /^[A-Za-z0-9_.-]{1,31}$/.test(id)),
        `${name} must be a comma-separated list of tenant ids, each <default> or 1 to 31 letters, digits, _, - or .`,
      )
      .transform((ids) => (ids === undefined ? undefined : [...new Set(ids)])),
  allowed: "comma-separated ids: `<default>` or 1–31 of `A-Z a-z 0-9 _ - .`",
};

const SDK = "the SDK's name";

export const zeebeDeclarations = {
  address: setting({
    env: "ZEEBE_ADDRESS",
    kind: hostPort,
    aliases: [{ env: "ZEEBE_GRPC_ADDRESS", kind: grpcAddress, note: "the SDK's name, `grpc://host:port` or `grpcs://host:port`" }],
    absent: "not started",
    doc: "The Zeebe gateway's `host:port`: starts the Zeebe job workers.",
  }),
  tls: setting({
    env: "ZEEBE_TLS",
    kind: flag,
    aliases: [
      { env: "CAMUNDA_SECURE_CONNECTION", note: SDK },
      { env: "ZEEBE_GRPC_ADDRESS", kind: grpcScheme, label: "the scheme of ZEEBE_GRPC_ADDRESS (grpcs:// is TLS, grpc:// plaintext)", note: "its scheme" },
    ],
    default: false,
    doc: "`true`: TLS to the gateway; `false`: plaintext.",
  }),
  rootCertPath: setting({
    env: "CAMUNDA_CUSTOM_ROOT_CERT_PATH",
    kind: readableFile,
    absent: "the public CAs",
    doc: "PEM file of the CA that signed the gateway's certificate (a private CA).",
  }),
  certChainPath: setting({
    env: "CAMUNDA_CUSTOM_CERT_CHAIN_PATH",
    kind: readableFile,
    absent: "none",
    doc: "Mutual TLS: PEM file of the worker's client certificate chain (with `CAMUNDA_CUSTOM_PRIVATE_KEY_PATH`; TLS on).",
  }),
  privateKeyPath: setting({
    env: "CAMUNDA_CUSTOM_PRIVATE_KEY_PATH",
    kind: readableFile,
    absent: "none",
    doc: "Mutual TLS: PEM file of the worker's private key (with `CAMUNDA_CUSTOM_CERT_CHAIN_PATH`; TLS on).",
  }),
  authStrategy: setting({
    env: "CAMUNDA_AUTH_STRATEGY",
    kind: oneOf(["OAUTH", "BASIC", "BEARER", "NONE"], { why: "COOKIE is not supported by the gRPC workers" }),
    absent: "the strategy whose settings are given, else `NONE`",
    doc: "How the workers authenticate to the gateway (the SDK's setting).",
    notes:
      "`OAUTH`: `ZEEBE_CLIENT_ID`, `ZEEBE_CLIENT_SECRET`, `ZEEBE_OAUTH_URL`; " +
      "`BASIC`: `CAMUNDA_BASIC_AUTH_USERNAME`, `CAMUNDA_BASIC_AUTH_PASSWORD`; `BEARER`: `CAMUNDA_OAUTH_TOKEN`.",
  }),
  clientId: setting({ env: "ZEEBE_CLIENT_ID", kind: text, absent: "none", doc: "OAuth client id (`OAUTH`)." }),
  clientSecret: setting({ env: "ZEEBE_CLIENT_SECRET", kind: secretText, secret: "value", absent: "none", doc: "OAuth client secret (`OAUTH`)." }),
  oauthUrl: setting({
    env: "ZEEBE_OAUTH_URL",
    kind: httpUrl(),
    aliases: [
      { env: "CAMUNDA_OAUTH_URL", note: SDK },
      { env: "ZEEBE_AUTHORIZATION_SERVER_URL", note: "the Java and Go clients' name" },
    ],
    absent: "none",
    doc: "OAuth token endpoint (`OAUTH`).",
  }),
  audience: setting({
    env: "ZEEBE_TOKEN_AUDIENCE",
    kind: text,
    aliases: [{ env: "CAMUNDA_ZEEBE_OAUTH_AUDIENCE", note: SDK }],
    absent: "none sent: the SDK's, `zeebe.camunda.io`",
    doc: "The `audience` parameter of the token request (`OAUTH`, optional).",
  }),
  scope: setting({ env: "CAMUNDA_TOKEN_SCOPE", kind: text, absent: "none sent", doc: "The `scope` parameter of the token request (`OAUTH`, optional)." }),
  basicUsername: setting({ env: "CAMUNDA_BASIC_AUTH_USERNAME", kind: text, absent: "none", doc: "Basic credentials: the user (`BASIC`)." }),
  basicPassword: setting({ env: "CAMUNDA_BASIC_AUTH_PASSWORD", kind: secretText, secret: "value", absent: "none", doc: "Basic credentials: the password (`BASIC`)." }),
  token: setting({ env: "CAMUNDA_OAUTH_TOKEN", kind: secretText, secret: "value", absent: "none", doc: "A static bearer token (`BEARER`)." }),
  tenantIds: setting({
    env: "ZEEBE_TENANT_IDS",
    kind: tenantIdList,
    absent: "the gateway's default tenant",
    doc: "Tenants whose jobs the workers activate.",
    notes: "Tenants need a multi-tenant cluster (Identity).",
  }),
  streamJobs: setting({
    env: "ZEEBE_STREAM_JOBS",
    kind: flag,
    default: false,
    doc: "`true`: jobs are pushed over a job stream (`StreamActivatedJobs`, Zeebe 8.4+), polling beside it as a fallback.",
    notes: "At most `WORKER_MAX_TASKS` jobs are in hand per job type (see the workers). `false`: long polling only.",
  }),
  streamPollIntervalMs: setting({
    env: "ZEEBE_STREAM_POLL_INTERVAL_MS",
    kind: integer(100, 3_600_000, "ms"),
    default: 10_000,
    doc: "With streaming, the pause between fallback polls that found no job.",
  }),
};

export const zeebeGroup: Group = {
  title: "Workers: Zeebe",
  about: "The names of `@camunda8/sdk` are read too; a setting given under two names must have the same value under both.",
  settings: zeebeDeclarations,
};

/** The PEM files of the worker's certificate chain and private key (their paths: the files are read by the worker's gRPC client, workers/zeebe/gateway-client.ts). */
export interface ZeebeClientCertificate {
  certChainPath: string;
  privateKeyPath: string;
}

/** How the Zeebe workers authenticate to the gateway: the SDK's CAMUNDA_AUTH_STRATEGY. */
export type ZeebeAuth =
  | { strategy: "NONE" }
  /** ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET, ZEEBE_OAUTH_URL / CAMUNDA_OAUTH_URL, ZEEBE_TOKEN_AUDIENCE, CAMUNDA_TOKEN_SCOPE. */
  | ({ strategy: "OAUTH" } & ClientCredentials)
  /** CAMUNDA_BASIC_AUTH_USERNAME, CAMUNDA_BASIC_AUTH_PASSWORD. */
  | { strategy: "BASIC"; username: string; password: Secret }
  /** CAMUNDA_OAUTH_TOKEN: a static bearer token. */
  | { strategy: "BEARER"; token: Secret };

const zeebeWorker = pick(zeebeDeclarations, "tls", "rootCertPath", "tenantIds", "streamJobs", "streamPollIntervalMs");

export interface ZeebeSettings extends WorkerSettings, Values<typeof zeebeWorker> {
  /** The gateway's `host:port`. */
  address: string;
  /** CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH (both or none, TLS on): the worker's client certificate for mutual TLS. */
  mtls: ZeebeClientCertificate | undefined;
  auth: ZeebeAuth;
}

/** Zeebe settings for the gateway at `address`, the rest given or defaulted. */
export function zeebeSettings(address: string, given: GivenWorker<ZeebeSettings> = {}): ZeebeSettings {
  return { address, ...workerSettings(given), ...withDefaults(zeebeWorker, given), mtls: given.mtls, auth: given.auth ?? { strategy: "NONE" } };
}

/**
 * The Zeebe gateway's address, client certificate and authentication, under our names or the
 * SDK's (ZEEBE_GRPC_ADDRESS, CAMUNDA_OAUTH_URL, CAMUNDA_AUTH_STRATEGY …); `oauthUrlName`: the
 * name the OAuth URL was given under, for messages.
 */
export function readZeebeConnection(e: Given<typeof zeebeDeclarations>, oauthUrlName: string, problems: string[]): Pick<ZeebeSettings, "address" | "mtls" | "auth"> | undefined {
  const { certChainPath, privateKeyPath } = e;
  let mtls: ZeebeClientCertificate | undefined;
  if ((certChainPath === undefined) !== (privateKeyPath === undefined)) {
    problems.push("CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH go together (mutual TLS): set both, or none");
  } else if (certChainPath !== undefined && privateKeyPath !== undefined) {
    if (e.tls !== true) problems.push("CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH (mutual TLS) need TLS: set ZEEBE_TLS=true or a grpcs:// ZEEBE_GRPC_ADDRESS");
    mtls = { certChainPath, privateKeyPath };
  }
  const strategy = strategyOf(problems, "CAMUNDA_AUTH_STRATEGY", e.authStrategy, "NONE", {
    OAUTH: {
      needs: { ZEEBE_CLIENT_ID: e.clientId, ZEEBE_CLIENT_SECRET: e.clientSecret, [oauthUrlName]: e.oauthUrl },
      takes: { ZEEBE_TOKEN_AUDIENCE: e.audience, CAMUNDA_TOKEN_SCOPE: e.scope },
    },
    BASIC: { needs: { CAMUNDA_BASIC_AUTH_USERNAME: e.basicUsername, CAMUNDA_BASIC_AUTH_PASSWORD: e.basicPassword } },
    BEARER: { needs: { CAMUNDA_OAUTH_TOKEN: e.token } },
  });
  if (e.address === undefined || strategy === undefined) return undefined;
  const auth: ZeebeAuth =
    strategy === "OAUTH"
      ? { strategy, ...clientCredentials(e.oauthUrl!, e.clientId!, e.clientSecret!, e.audience, e.scope) }
      : strategy === "BASIC"
        ? { strategy, username: e.basicUsername!, password: e.basicPassword! }
        : strategy === "BEARER"
          ? { strategy, token: e.token! }
          : { strategy };
  return { address: e.address, mtls, auth };
}
