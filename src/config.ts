import { createPublicKey, type KeyObject } from "node:crypto";
import { accessSync, constants, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { z } from "zod";
import { EXPRESSION_LIMIT_CEILINGS } from "./calculation/expression-size.js";
import { DEFAULT_DATABASE_TIMEOUTS, DEFAULT_QUERY_TIMEOUT_MS, type DatabaseTimeouts } from "./db/timeouts.js";
import { Secret, secretsIn, urlSecrets } from "./secrets.js";

/**
 * Everything the server and the workers read from the environment, validated once at start-up.
 * Nothing else in the code base reads `process.env`.
 */
export interface Config {
  /**
   * `server`: the REST API, with the workers beside it when an engine is configured. `worker`: the
   * workers alone (`npm run worker`), serving only /health, /ready and /metrics; needs no JWT key.
   */
  role: Role;
  /** REST port. Default 3000. */
  port: number;
  /** Interface the REST server binds to. Default `0.0.0.0`. */
  host: string;
  /** PostgreSQL connection string; absent means the embedded PostgreSQL (PGlite). */
  databaseUrl: string | undefined;
  /** Where the embedded database keeps its files; `memory://` keeps it in memory. Default `./data`. */
  dataDir: string;
  /** Size of the PostgreSQL connection pool. Default 10. */
  databasePoolSize: number;
  auth: AuthConfig;
  /** IANA zone for event date ranges and buckets. Default `Europe/Brussels`. */
  defaultTimeZone: string;
  /** Largest accepted request body in bytes. Default 10 MiB. */
  bodyLimitBytes: number;
  /**
   * Longest line of an NDJSON upload, and longest row (every field of it) of a CSV upload, in bytes
   * (UPLOAD_LINE_LIMIT_BYTES): a longer one ends the upload with a `413` while it streams, before
   * more of it is held. Streamed uploads have no total limit. Default 1 MiB.
   */
  uploadLineLimitBytes: number;
  /** Longest a graph query statement may run. Default 5000 ms. */
  queryTimeoutMs: number;
  /** Most rows a graph query may return. Default 10000. */
  queryMaxRows: number;
  /** Longest a transform may run, sub-queries included. Default 2000 ms. */
  transformTimeoutMs: number;
  /** Child processes that evaluate transforms (TRANSFORM_PROCESSES). Default: the number of cores, at least 2. */
  transformProcesses: number;
  /** Heap ceiling of one transform process, MiB (TRANSFORM_MEMORY_MB). Default 256. */
  transformMemoryMb: number;
  /** Largest transform result, bytes of its JSON text (TRANSFORM_MAX_RESULT_BYTES). Default 10 MiB. */
  transformMaxResultBytes: number;
  /** Transforms waiting for a process before new ones get 503 (TRANSFORM_MAX_QUEUE). Default 1000. */
  transformMaxQueue: number;
  /** Longest one calculation may run, nested ones included. Default 10000 ms. */
  calculationTimeoutMs: number;
  /** Most steps of one CALCULATION definition, on save and at run time. Default 1000. */
  calculationMaxSteps: number;
  /** Most characters of one calculation expression. Default 1000, at most 2500 (longer could overflow mathjs's stack). */
  expressionMaxLength: number;
  /** Deepest nesting of one calculation expression (parentheses, calls, unary, power, conditional operators). Default 50, at most 100. */
  expressionMaxDepth: number;
  /** Longest a graceful shutdown waits for work in flight. Default 30000 ms. */
  shutdownTimeoutMs: number;
  /** winston level, or `silent`. Default `info`. */
  logLevel: LogLevel;
  /** The Camunda 7 external-task worker (CAMUNDA_URL and the worker settings); absent: not started. */
  camunda7: Camunda7Settings | undefined;
  /** The Zeebe job workers (ZEEBE_ADDRESS, ZEEBE_TLS, OAuth and the worker settings); absent: not started. */
  zeebe: ZeebeSettings | undefined;
  /** Bounds of the database connections (DATABASE_*_TIMEOUT_MS, DATABASE_KEEPALIVE_MS); see {@link DatabaseTimeouts}. */
  databaseTimeouts: DatabaseTimeouts;
  /** Live streams over WebSocket (contract §10). */
  streams: StreamSettings;
}

export interface StreamSettings {
  /** STREAM_BUFFER_BYTES: bytes a subscriber may leave unread before it is dropped (close 4408). Default 1 MiB. */
  bufferBytes: number;
  /** STREAM_PING_MS: a ping every this many ms; a connection that has not answered the last one is ended. Default 30000. */
  pingMs: number;
  /** STREAM_DEBOUNCE_MS: a CALCULATE item's latest bucket is recomputed at most once per this many ms. Default 250. */
  debounceMs: number;
}

/** The Camunda 7 topics and Zeebe job types the workers subscribe to (TOPIC_API_REQUEST, TOPIC_CALCULATE_SERIES). */
export interface WorkerTopics {
  apiRequest: string;
  calculateSeries: string;
}

/** What both engines' workers read. Each default is applied in {@link workerSettings}, nowhere else. */
export interface WorkerSettings {
  /** Default `api-request` and `calculate-series`. */
  topics: WorkerTopics;
  /** WORKER_MAX_TASKS: tasks (jobs) in hand at once per worker. Default 10. */
  maxTasks: number;
  /** WORKER_LOCK_DURATION_MS: Camunda 7 lock / Zeebe job timeout, each extended while a task runs. Default 30000. */
  lockDurationMs: number;
  /** WORKER_DEFAULT_RETRIES: retries of a task whose engine gives none. Default 3. */
  defaultRetries: number;
}

export interface Camunda7Settings extends WorkerSettings {
  /** CAMUNDA_URL: the REST base, e.g. http://localhost:8080/engine-rest, without userinfo (that is read into {@link Camunda7Settings.auth}). */
  url: string;
  /** CAMUNDA_AUTH and its settings: how each request to the engine is authenticated. Default `none`. */
  auth: Camunda7Auth;
  /** CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: long-polling wait of one fetch. Default 10000. */
  asyncResponseTimeoutMs: number;
  /** CAMUNDA_WORKER_ID; absent: `<host>-<pid>-<random>`. */
  workerId: string | undefined;
}

export interface ZeebeSettings extends WorkerSettings {
  /** ZEEBE_ADDRESS (or the SDK's ZEEBE_GRPC_ADDRESS, `grpc://` or `grpcs://`): the gateway's `host:port`. */
  address: string;
  /** ZEEBE_TLS (or CAMUNDA_SECURE_CONNECTION, or a `grpcs://` ZEEBE_GRPC_ADDRESS): TLS to the gateway. Default false: plaintext. */
  tls: boolean;
  /** CAMUNDA_CUSTOM_ROOT_CERT_PATH: a PEM file of the CA the gateway's certificate comes from; absent: the public CAs. */
  rootCertPath: string | undefined;
  /** CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH (both or none, TLS on): the worker's client certificate for mutual TLS. */
  mtls: ZeebeClientCertificate | undefined;
  /** CAMUNDA_AUTH_STRATEGY and its settings (the SDK's names). Default `NONE`, or `OAUTH` when client credentials are set. */
  auth: ZeebeAuth;
  /** ZEEBE_TENANT_IDS: the tenants whose jobs the workers activate; absent: the gateway's default tenant. */
  tenantIds: string[] | undefined;
  /** ZEEBE_STREAM_JOBS: jobs pushed over a job stream (StreamActivatedJobs), polling beside it as a fallback. Default false: long polling only. */
  streamJobs: boolean;
  /** ZEEBE_STREAM_POLL_INTERVAL_MS: with streaming, the pause between fallback polls that found no job. Default 10000. */
  streamPollIntervalMs: number;
}

/** The PEM files of the worker's certificate chain and private key (their paths: the files are read by the SDK). */
export interface ZeebeClientCertificate {
  certChainPath: string;
  privateKeyPath: string;
}

/** OAuth 2.0 client credentials: a token asked of `url` with the client's id and secret, kept until shortly before it expires. */
export interface ClientCredentials {
  /** The token endpoint. */
  url: string;
  clientId: string;
  clientSecret: Secret;
  /** The `audience` parameter of the token request; absent: none sent (Zeebe: the SDK's default, `zeebe.camunda.io`). */
  audience?: string;
  /** The `scope` parameter of the token request; absent: none sent. */
  scope?: string;
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

/** How the Camunda 7 worker authenticates to the engine's REST API: CAMUNDA_AUTH. */
export type Camunda7Auth =
  | { kind: "none" }
  /** CAMUNDA_USERNAME and CAMUNDA_PASSWORD, or the userinfo of CAMUNDA_URL. */
  | { kind: "basic"; username: string; password: Secret }
  /** CAMUNDA_TOKEN: a static bearer token. */
  | { kind: "bearer"; token: Secret }
  /** CAMUNDA_TOKEN_URL, CAMUNDA_CLIENT_ID, CAMUNDA_CLIENT_SECRET, CAMUNDA_CLIENT_SCOPE, CAMUNDA_CLIENT_AUDIENCE: a bearer token fetched with client credentials. */
  | ({ kind: "oauth" } & ClientCredentials);

/** Settings given in part (an environment, a test); what is absent takes its default. */
type Given<T extends WorkerSettings> = Partial<Omit<T, "topics">> & { topics?: Partial<WorkerTopics> };

/** The worker settings with their defaults: the one place they are applied. */
export function workerSettings(given: Given<WorkerSettings> = {}): WorkerSettings {
  return {
    topics: { apiRequest: given.topics?.apiRequest ?? "api-request", calculateSeries: given.topics?.calculateSeries ?? "calculate-series" },
    maxTasks: given.maxTasks ?? 10,
    lockDurationMs: given.lockDurationMs ?? 30_000,
    defaultRetries: given.defaultRetries ?? 3,
  };
}

/** Camunda 7 settings for `url`, the rest given or defaulted. */
export function camunda7Settings(url: string, given: Given<Camunda7Settings> = {}): Camunda7Settings {
  return { url, auth: given.auth ?? { kind: "none" }, ...workerSettings(given), asyncResponseTimeoutMs: given.asyncResponseTimeoutMs ?? 10_000, workerId: given.workerId };
}

/** Zeebe settings for the gateway at `address`, the rest given or defaulted. */
export function zeebeSettings(address: string, given: Given<ZeebeSettings> = {}): ZeebeSettings {
  return {
    address,
    ...workerSettings(given),
    tls: given.tls ?? false,
    rootCertPath: given.rootCertPath,
    mtls: given.mtls,
    auth: given.auth ?? { strategy: "NONE" },
    tenantIds: given.tenantIds,
    streamJobs: given.streamJobs ?? false,
    streamPollIntervalMs: given.streamPollIntervalMs ?? 10_000,
  };
}

export type Role = "server" | "worker";

export type LogLevel = "error" | "warn" | "info" | "debug" | "silent";

export type AuthConfig =
  | { disabled: true; userClaim: string }
  | {
      disabled: false;
      /** HS256 shared secret, or the public key (RS256 for RSA keys, ES256 for EC keys). */
      key: { kind: "secret"; secret: Secret } | { kind: "public"; key: KeyObject; algorithm: "RS256" | "ES256" };
      /** Claim holding the user id. Default `sub`. */
      userClaim: string;
      issuer: string | undefined;
      audience: string | undefined;
      /** Claim naming the tenants a token may act in: an array of names, or `"*"` (JWT_TENANTS_CLAIM). Default `tenants`. */
      tenantsClaim: string;
      /** Leeway for `exp`, `nbf` and `iat`, in seconds (JWT_CLOCK_SKEW_SECONDS). Default 5. */
      clockSkewSeconds: number;
    };

/** DATA_DIR's default, also where the demo keeps its development secret before the configuration is read. */
export const DEFAULT_DATA_DIR = "./data";

/** Thrown when the environment holds a value the service cannot start with. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

const integer = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `${name} must be between ${min} and ${max}`);

const optionalText = z
  .string()
  .transform((s) => s.trim())
  .transform((s) => (s === "" ? undefined : s))
  .optional();

const booleanFlag = (name: string) =>
  z
    .string()
    .transform((s) => s.trim().toLowerCase())
    .refine((s) => ["true", "false", "1", "0", ""].includes(s), `${name} must be true or false`)
    .transform((s) => s === "true" || s === "1");

/**
 * A comma-separated list of Zeebe tenant ids (each `<default>` or 1–31 of `A-Z a-z 0-9 _ - .`,
 * Zeebe's rule); blank or absent: none given.
 */
const tenantIdList = (name: string) =>
  optionalText
    .transform((s) => s?.split(",").map((id) => id.trim()))
    .refine(
      (ids) => ids === undefined || ids.every((id) => id === "<default>" || /^[A-Za-z0-9_.-]{1,31}$/.test(id)),
      `${name} must be a comma-separated list of tenant ids, each <default> or 1 to 31 letters, digits, _, - or .`,
    )
    .transform((ids) => (ids === undefined ? undefined : [...new Set(ids)]));

function isUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** A gateway address: `host:port`. */
const HOST_PORT = /^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/;
/** The SDK's form: `grpc://host:port` or `grpcs://host:port` (or `host:port`, its legacy form). */
const GRPC_ADDRESS = /^(?:(grpcs?):\/\/)?([A-Za-z0-9.\-[\]:]+:\d{1,5})\/?$/;

const httpUrl = (name: string) => optionalText.refine((v) => v === undefined || isUrl(v, ["http:", "https:"]), `${name} must be an http(s) URL`);

const readableFile = (name: string) => optionalText.refine((v) => v === undefined || isReadableFile(v), `${name} must be a readable PEM file`);

function isReadableFile(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const envSchema = z.object({
  PORT: integer("PORT", 0, 65535).optional(),
  HOST: optionalText,
  DATABASE_URL: optionalText.refine(
    (v) => v === undefined || isUrl(v, ["postgres:", "postgresql:"]),
    "DATABASE_URL must be a URL like postgres://user@host:5432/database",
  ),
  DATA_DIR: optionalText,
  DATABASE_POOL_SIZE: integer("DATABASE_POOL_SIZE", 1, 200).optional(),
  DEFAULT_TIME_ZONE: optionalText.refine(
    (v) => v === undefined || isTimeZone(v),
    "DEFAULT_TIME_ZONE must be an IANA time zone such as Europe/Brussels",
  ),
  BODY_LIMIT_BYTES: integer("BODY_LIMIT_BYTES", 1024, 1024 * 1024 * 1024).optional(),
  UPLOAD_LINE_LIMIT_BYTES: integer("UPLOAD_LINE_LIMIT_BYTES", 1024, 256 * 1024 * 1024).optional(),
  QUERY_TIMEOUT_MS: integer("QUERY_TIMEOUT_MS", 1, 3_600_000).optional(),
  QUERY_MAX_ROWS: integer("QUERY_MAX_ROWS", 1, 10_000_000).optional(),
  TRANSFORM_TIMEOUT_MS: integer("TRANSFORM_TIMEOUT_MS", 1, 3_600_000).optional(),
  TRANSFORM_PROCESSES: integer("TRANSFORM_PROCESSES", 1, 256).optional(),
  TRANSFORM_MEMORY_MB: integer("TRANSFORM_MEMORY_MB", 16, 65_536).optional(),
  TRANSFORM_MAX_RESULT_BYTES: integer("TRANSFORM_MAX_RESULT_BYTES", 1024, 1024 * 1024 * 1024).optional(),
  TRANSFORM_MAX_QUEUE: integer("TRANSFORM_MAX_QUEUE", 0, 1_000_000).optional(),
  CALCULATION_TIMEOUT_MS: integer("CALCULATION_TIMEOUT_MS", 1, 3_600_000).optional(),
  CALCULATION_MAX_STEPS: integer("CALCULATION_MAX_STEPS", 1, 100_000).optional(),
  // Above these ceilings an expression that passes the limits could overflow the stack.
  EXPRESSION_MAX_LENGTH: integer("EXPRESSION_MAX_LENGTH", 1, EXPRESSION_LIMIT_CEILINGS.maxLength).optional(),
  EXPRESSION_MAX_DEPTH: integer("EXPRESSION_MAX_DEPTH", 1, EXPRESSION_LIMIT_CEILINGS.maxDepth).optional(),
  SHUTDOWN_TIMEOUT_MS: integer("SHUTDOWN_TIMEOUT_MS", 0, 3_600_000).optional(),
  LOG_LEVEL: z.enum(["error", "warn", "info", "debug", "silent"], "LOG_LEVEL must be one of error, warn, info, debug, silent").optional(),
  CAMUNDA_URL: optionalText.refine(
    (v) => v === undefined || isUrl(v, ["http:", "https:"]),
    "CAMUNDA_URL must be an http(s) URL like http://localhost:8080/engine-rest",
  ),
  // Camunda 7 authentication (CAMUNDA_AUTH): names of ours, none of them the SDK's (those are Zeebe's).
  CAMUNDA_AUTH: optionalText.pipe(z.enum(["none", "basic", "bearer", "oauth"], "CAMUNDA_AUTH must be one of none, basic, bearer, oauth").optional()),
  CAMUNDA_USERNAME: optionalText,
  CAMUNDA_PASSWORD: optionalText,
  CAMUNDA_TOKEN: optionalText,
  CAMUNDA_TOKEN_URL: optionalText.refine((v) => v === undefined || isUrl(v, ["http:", "https:"]), "CAMUNDA_TOKEN_URL must be an http(s) URL"),
  CAMUNDA_CLIENT_ID: optionalText,
  CAMUNDA_CLIENT_SECRET: optionalText,
  CAMUNDA_CLIENT_SCOPE: optionalText,
  CAMUNDA_CLIENT_AUDIENCE: optionalText,
  ZEEBE_TLS: booleanFlag("ZEEBE_TLS").optional(),
  // The SDK's name for ZEEBE_TLS (deprecated there in favour of a grpcs:// ZEEBE_GRPC_ADDRESS).
  CAMUNDA_SECURE_CONNECTION: booleanFlag("CAMUNDA_SECURE_CONNECTION").optional(),
  CAMUNDA_CUSTOM_ROOT_CERT_PATH: readableFile("CAMUNDA_CUSTOM_ROOT_CERT_PATH"),
  CAMUNDA_CUSTOM_CERT_CHAIN_PATH: readableFile("CAMUNDA_CUSTOM_CERT_CHAIN_PATH"),
  CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: readableFile("CAMUNDA_CUSTOM_PRIVATE_KEY_PATH"),
  TOPIC_API_REQUEST: optionalText,
  TOPIC_CALCULATE_SERIES: optionalText,
  WORKER_MAX_TASKS: integer("WORKER_MAX_TASKS", 1, 1000).optional(),
  WORKER_LOCK_DURATION_MS: integer("WORKER_LOCK_DURATION_MS", 1000, 86_400_000).optional(),
  CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: integer("CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS", 0, 600_000).optional(),
  WORKER_DEFAULT_RETRIES: integer("WORKER_DEFAULT_RETRIES", 0, 100).optional(),
  CAMUNDA_WORKER_ID: optionalText,
  ZEEBE_CLIENT_ID: optionalText,
  ZEEBE_CLIENT_SECRET: optionalText,
  ZEEBE_OAUTH_URL: httpUrl("ZEEBE_OAUTH_URL"),
  // The SDK's name, and the Java and Go clients' (Camunda SaaS credential files of 8.5 and before).
  CAMUNDA_OAUTH_URL: httpUrl("CAMUNDA_OAUTH_URL"),
  ZEEBE_AUTHORIZATION_SERVER_URL: httpUrl("ZEEBE_AUTHORIZATION_SERVER_URL"),
  ZEEBE_TOKEN_AUDIENCE: optionalText,
  CAMUNDA_ZEEBE_OAUTH_AUDIENCE: optionalText,
  CAMUNDA_TOKEN_SCOPE: optionalText,
  CAMUNDA_AUTH_STRATEGY: optionalText.pipe(
    z.enum(["OAUTH", "BASIC", "BEARER", "NONE"], "CAMUNDA_AUTH_STRATEGY must be one of OAUTH, BASIC, BEARER, NONE (COOKIE is not supported by the gRPC workers)").optional(),
  ),
  CAMUNDA_BASIC_AUTH_USERNAME: optionalText,
  CAMUNDA_BASIC_AUTH_PASSWORD: optionalText,
  CAMUNDA_OAUTH_TOKEN: optionalText,
  ZEEBE_TENANT_IDS: tenantIdList("ZEEBE_TENANT_IDS"),
  ZEEBE_STREAM_JOBS: booleanFlag("ZEEBE_STREAM_JOBS").optional(),
  ZEEBE_STREAM_POLL_INTERVAL_MS: integer("ZEEBE_STREAM_POLL_INTERVAL_MS", 100, 3_600_000).optional(),
  // Database faults: bounds of every connection (src/db/timeouts.ts).
  DATABASE_CONNECT_TIMEOUT_MS: integer("DATABASE_CONNECT_TIMEOUT_MS", 100, 600_000).optional(),
  DATABASE_ACQUIRE_TIMEOUT_MS: integer("DATABASE_ACQUIRE_TIMEOUT_MS", 100, 600_000).optional(),
  DATABASE_STATEMENT_TIMEOUT_MS: integer("DATABASE_STATEMENT_TIMEOUT_MS", 100, 3_600_000).optional(),
  DATABASE_IDLE_TIMEOUT_MS: integer("DATABASE_IDLE_TIMEOUT_MS", 100, 3_600_000).optional(),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: integer("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 0, 3_600_000).optional(),
  DATABASE_KEEPALIVE_MS: integer("DATABASE_KEEPALIVE_MS", 0, 3_600_000).optional(),
  DATABASE_PROBE_TIMEOUT_MS: integer("DATABASE_PROBE_TIMEOUT_MS", 50, 900).optional(),
  DATABASE_STARTUP_TIMEOUT_MS: integer("DATABASE_STARTUP_TIMEOUT_MS", 0, 3_600_000).optional(),
  STREAM_BUFFER_BYTES: integer("STREAM_BUFFER_BYTES", 1024, 1024 * 1024 * 1024).optional(),
  STREAM_PING_MS: integer("STREAM_PING_MS", 100, 3_600_000).optional(),
  STREAM_DEBOUNCE_MS: integer("STREAM_DEBOUNCE_MS", 0, 600_000).optional(),
  ZEEBE_ADDRESS: optionalText.refine((v) => v === undefined || HOST_PORT.test(v), "ZEEBE_ADDRESS must be host:port, like localhost:26500"),
  ZEEBE_GRPC_ADDRESS: optionalText.refine(
    (v) => v === undefined || GRPC_ADDRESS.test(v),
    "ZEEBE_GRPC_ADDRESS must be grpc://host:port (plaintext) or grpcs://host:port (TLS), like grpc://localhost:26500",
  ),
});

const authSchema = z.object({
  JWT_SECRET: optionalText,
  JWT_PUBLIC_KEY: optionalText,
  JWT_USER_CLAIM: optionalText,
  JWT_ISSUER: optionalText,
  JWT_AUDIENCE: optionalText,
  JWT_TENANTS_CLAIM: optionalText,
  JWT_CLOCK_SKEW_SECONDS: integer("JWT_CLOCK_SKEW_SECONDS", 0, 300).optional(),
  AUTH_DISABLED: booleanFlag("AUTH_DISABLED").optional(),
});

type Env = Record<string, string | undefined>;

/** The process environment; the one place that reads it. */
export function processEnvironment(): Env {
  return process.env;
}

/** Reads and checks the environment; every problem is reported at once in a {@link ConfigError}. */
export function loadConfig(env: Env = processEnvironment(), role: Role = "server"): Config {
  const problems: string[] = [];
  const parsed = envSchema.safeParse(env);
  const parsedAuth = authSchema.safeParse(env);
  for (const result of [parsed, parsedAuth]) {
    if (!result.success) problems.push(...result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`));
  }
  // The workers alone serve no API, so they need no key to check tokens with.
  const auth: AuthConfig | undefined =
    role === "worker" ? { disabled: true, userClaim: env.JWT_USER_CLAIM ?? "sub" } : parsedAuth.success ? readAuth(parsedAuth.data, problems) : undefined;
  if (parsed.success && role === "worker" && parsed.data.CAMUNDA_URL === undefined && parsed.data.ZEEBE_ADDRESS === undefined && parsed.data.ZEEBE_GRPC_ADDRESS === undefined) {
    problems.push("the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS or ZEEBE_GRPC_ADDRESS (Zeebe), or both");
  }
  if (parsed.success) {
    // A graph query is a database statement: its own time-out cannot be the longer one.
    const graphTimeout = parsed.data.QUERY_TIMEOUT_MS ?? DEFAULT_QUERY_TIMEOUT_MS;
    const statementTimeout = parsed.data.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs;
    if (graphTimeout > statementTimeout) {
      problems.push(`QUERY_TIMEOUT_MS (${graphTimeout}) must not be longer than DATABASE_STATEMENT_TIMEOUT_MS (${statementTimeout})`);
    }
  }
  const engines = parsed.success ? readEngines(parsed.data, problems) : undefined;
  if (parsed.success && engines?.camunda7 !== undefined) {
    // A shutdown lets the Camunda 7 long poll in progress finish: it must fit in the shutdown's time.
    const longPoll = engines.camunda7.asyncResponseTimeoutMs;
    const shutdown = shutdownTimeoutMs(parsed.data);
    if (longPoll >= shutdown) {
      problems.push(`CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS (${longPoll}) must be shorter than SHUTDOWN_TIMEOUT_MS (${shutdown}): a shutdown waits for the long poll in progress`);
    }
  }
  if (!parsed.success || auth === undefined || engines === undefined || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  return {
    role,
    port: e.PORT ?? 3000,
    host: e.HOST ?? "0.0.0.0",
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR ?? DEFAULT_DATA_DIR,
    databasePoolSize: e.DATABASE_POOL_SIZE ?? 10,
    auth,
    defaultTimeZone: e.DEFAULT_TIME_ZONE ?? "Europe/Brussels",
    bodyLimitBytes: e.BODY_LIMIT_BYTES ?? 10 * 1024 * 1024,
    uploadLineLimitBytes: e.UPLOAD_LINE_LIMIT_BYTES ?? 1024 * 1024,
    queryTimeoutMs: e.QUERY_TIMEOUT_MS ?? DEFAULT_QUERY_TIMEOUT_MS,
    queryMaxRows: e.QUERY_MAX_ROWS ?? 10_000,
    transformTimeoutMs: e.TRANSFORM_TIMEOUT_MS ?? 2000,
    transformProcesses: e.TRANSFORM_PROCESSES ?? Math.max(2, availableParallelism()),
    transformMemoryMb: e.TRANSFORM_MEMORY_MB ?? 256,
    transformMaxResultBytes: e.TRANSFORM_MAX_RESULT_BYTES ?? 10 * 1024 * 1024,
    transformMaxQueue: e.TRANSFORM_MAX_QUEUE ?? 1000,
    calculationTimeoutMs: e.CALCULATION_TIMEOUT_MS ?? 10_000,
    calculationMaxSteps: e.CALCULATION_MAX_STEPS ?? 1000,
    expressionMaxLength: e.EXPRESSION_MAX_LENGTH ?? 1000,
    expressionMaxDepth: e.EXPRESSION_MAX_DEPTH ?? 50,
    shutdownTimeoutMs: shutdownTimeoutMs(e),
    logLevel: e.LOG_LEVEL ?? "info",
    databaseTimeouts: {
      connectMs: e.DATABASE_CONNECT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.connectMs,
      acquireMs: e.DATABASE_ACQUIRE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.acquireMs,
      statementMs: e.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs,
      idleMs: e.DATABASE_IDLE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.idleMs,
      idleInTransactionMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.idleInTransactionMs,
      keepAliveMs: e.DATABASE_KEEPALIVE_MS ?? DEFAULT_DATABASE_TIMEOUTS.keepAliveMs,
      probeMs: e.DATABASE_PROBE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.probeMs,
      startupMs: e.DATABASE_STARTUP_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.startupMs,
    },
    streams: {
      bufferBytes: e.STREAM_BUFFER_BYTES ?? 1024 * 1024,
      pingMs: e.STREAM_PING_MS ?? 30_000,
      debounceMs: e.STREAM_DEBOUNCE_MS ?? 250,
    },
    ...engines,
  };
}

type EnvValues = z.infer<typeof envSchema>;

function shutdownTimeoutMs(e: EnvValues): number {
  return e.SHUTDOWN_TIMEOUT_MS ?? 30_000;
}

/** The engines whose address is set, with their worker settings; a problem for each setting in conflict. */
function readEngines(e: EnvValues, problems: string[]): Pick<Config, "camunda7" | "zeebe"> {
  const given = {
    topics: { apiRequest: e.TOPIC_API_REQUEST, calculateSeries: e.TOPIC_CALCULATE_SERIES },
    maxTasks: e.WORKER_MAX_TASKS,
    lockDurationMs: e.WORKER_LOCK_DURATION_MS,
    defaultRetries: e.WORKER_DEFAULT_RETRIES,
  };
  const camunda7 = readCamunda7Connection(e, problems);
  const zeebe = readZeebeConnection(e, problems);
  return {
    camunda7: camunda7 === undefined ? undefined : camunda7Settings(camunda7.url, { ...given, auth: camunda7.auth, asyncResponseTimeoutMs: e.CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS, workerId: e.CAMUNDA_WORKER_ID }),
    zeebe:
      zeebe === undefined
        ? undefined
        : zeebeSettings(zeebe.address, {
            ...given,
            ...zeebe,
            rootCertPath: e.CAMUNDA_CUSTOM_ROOT_CERT_PATH,
            tenantIds: e.ZEEBE_TENANT_IDS,
            streamJobs: e.ZEEBE_STREAM_JOBS,
            streamPollIntervalMs: e.ZEEBE_STREAM_POLL_INTERVAL_MS,
          }),
  };
}

/**
 * One setting given under several names (ours, the SDK's): the value they agree on. Two names
 * that disagree are a problem naming both, never their values (one may be a secret).
 */
function agreed<T>(problems: string[], named: readonly (readonly [name: string, value: T | undefined])[]): T | undefined {
  const given = named.filter((n): n is readonly [string, T] => n[1] !== undefined);
  const first = given[0];
  if (first === undefined) return undefined;
  const other = given.find(([, value]) => value !== first[1]);
  if (other !== undefined) problems.push(`${first[0]} and ${other[0]} disagree: they name the same setting; set one of them, or both to the same value`);
  return first[1];
}

/** An authentication strategy's settings by name: those it needs and those it may take. */
interface StrategySettings {
  needs: Record<string, string | undefined>;
  takes?: Record<string, string | undefined>;
}

/**
 * The strategy `chosen` under `setting`, or else the one whose settings are given (else `none`).
 * A strategy chosen without the settings it needs, settings of another strategy beside it, or
 * settings of two strategies and no choice, are problems naming the settings.
 */
function strategyOf<S extends string>(problems: string[], setting: string, chosen: S | undefined, none: S, strategies: Partial<Record<S, StrategySettings>>): S | undefined {
  const names = (s: StrategySettings) => [...Object.entries(s.needs), ...Object.entries(s.takes ?? {})].filter(([, v]) => v !== undefined).map(([n]) => n);
  const entries = Object.entries(strategies) as [S, StrategySettings][];
  const given = entries.filter(([, s]) => names(s).length > 0);
  let strategy = chosen;
  if (strategy === undefined) {
    if (given.length > 1) {
      problems.push(`${given.map(([s, settings]) => `${names(settings).join(", ")} (${s})`).join(" and ")} are settings of different authentication strategies: set ${setting} and only its settings`);
      return undefined;
    }
    strategy = given[0]?.[0] ?? none;
  } else {
    for (const [other, settings] of given) {
      if (other !== strategy) problems.push(`${setting}=${strategy} does not use ${names(settings).join(", ")} (${other}): remove it, or choose ${other}`);
    }
  }
  const needs = strategies[strategy]?.needs ?? {};
  const missing = Object.keys(needs).filter((n) => needs[n] === undefined);
  if (missing.length > 0) {
    const all = Object.keys(needs);
    problems.push(chosen === undefined ? `${all.join(", ")} go together (${strategy}): set all of them, or none` : `${setting}=${strategy} needs ${missing.join(", ")}`);
    return undefined;
  }
  return strategy;
}

/** CAMUNDA_URL (its userinfo taken out: basic credentials) and CAMUNDA_AUTH with its settings. */
function readCamunda7Connection(e: EnvValues, problems: string[]): { url: string; auth: Camunda7Auth } | undefined {
  let url = e.CAMUNDA_URL;
  let userinfo: { username: string | undefined; password: string | undefined } = { username: undefined, password: undefined };
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
      userinfo = { username: decoded(parsed.username, "user"), password: decoded(parsed.password, "password") };
      parsed.username = "";
      parsed.password = "";
      url = parsed.toString();
    }
  }
  const username = agreed(problems, [["CAMUNDA_USERNAME", e.CAMUNDA_USERNAME], ["the user in CAMUNDA_URL", userinfo.username]]);
  const password = agreed(problems, [["CAMUNDA_PASSWORD", e.CAMUNDA_PASSWORD], ["the password in CAMUNDA_URL", userinfo.password]]);
  const kind = strategyOf(problems, "CAMUNDA_AUTH", e.CAMUNDA_AUTH, "none", {
    basic: { needs: { CAMUNDA_USERNAME: username, CAMUNDA_PASSWORD: password } },
    bearer: { needs: { CAMUNDA_TOKEN: e.CAMUNDA_TOKEN } },
    oauth: {
      needs: { CAMUNDA_TOKEN_URL: e.CAMUNDA_TOKEN_URL, CAMUNDA_CLIENT_ID: e.CAMUNDA_CLIENT_ID, CAMUNDA_CLIENT_SECRET: e.CAMUNDA_CLIENT_SECRET },
      takes: { CAMUNDA_CLIENT_SCOPE: e.CAMUNDA_CLIENT_SCOPE, CAMUNDA_CLIENT_AUDIENCE: e.CAMUNDA_CLIENT_AUDIENCE },
    },
  });
  if (url === undefined || kind === undefined) return undefined;
  switch (kind) {
    case "none":
      return { url, auth: { kind } };
    case "basic":
      return { url, auth: { kind, username: username!, password: new Secret(password!) } };
    case "bearer":
      return { url, auth: { kind, token: new Secret(e.CAMUNDA_TOKEN!) } };
    case "oauth":
      return { url, auth: { kind, ...clientCredentials(e.CAMUNDA_TOKEN_URL!, e.CAMUNDA_CLIENT_ID!, e.CAMUNDA_CLIENT_SECRET!, e.CAMUNDA_CLIENT_AUDIENCE, e.CAMUNDA_CLIENT_SCOPE) } };
  }
}

function clientCredentials(url: string, clientId: string, clientSecret: string, audience: string | undefined, scope: string | undefined): ClientCredentials {
  return { url, clientId, clientSecret: new Secret(clientSecret), ...(audience !== undefined ? { audience } : {}), ...(scope !== undefined ? { scope } : {}) };
}

/**
 * The Zeebe gateway's address, TLS, client certificate and authentication, under our names or the
 * SDK's (ZEEBE_GRPC_ADDRESS, CAMUNDA_SECURE_CONNECTION, CAMUNDA_OAUTH_URL, CAMUNDA_AUTH_STRATEGY …).
 */
function readZeebeConnection(e: EnvValues, problems: string[]): Pick<ZeebeSettings, "address" | "tls" | "mtls" | "auth"> | undefined {
  const grpc = e.ZEEBE_GRPC_ADDRESS === undefined ? undefined : GRPC_ADDRESS.exec(e.ZEEBE_GRPC_ADDRESS);
  const address = agreed(problems, [
    ["ZEEBE_ADDRESS", e.ZEEBE_ADDRESS?.toLowerCase()],
    ["ZEEBE_GRPC_ADDRESS", grpc?.[2]?.toLowerCase()],
  ]);
  const scheme = grpc?.[1];
  const tls =
    agreed(problems, [
      ["ZEEBE_TLS", e.ZEEBE_TLS],
      ["CAMUNDA_SECURE_CONNECTION", e.CAMUNDA_SECURE_CONNECTION],
      ["the scheme of ZEEBE_GRPC_ADDRESS (grpcs:// is TLS, grpc:// plaintext)", scheme === undefined ? undefined : scheme === "grpcs"],
    ]) ?? false;
  const certChainPath = e.CAMUNDA_CUSTOM_CERT_CHAIN_PATH;
  const privateKeyPath = e.CAMUNDA_CUSTOM_PRIVATE_KEY_PATH;
  let mtls: ZeebeClientCertificate | undefined;
  if ((certChainPath === undefined) !== (privateKeyPath === undefined)) {
    problems.push("CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH go together (mutual TLS): set both, or none");
  } else if (certChainPath !== undefined && privateKeyPath !== undefined) {
    if (!tls) problems.push("CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH (mutual TLS) need TLS: set ZEEBE_TLS=true or a grpcs:// ZEEBE_GRPC_ADDRESS");
    mtls = { certChainPath, privateKeyPath };
  }
  const oauthUrl = agreed(problems, [
    ["ZEEBE_OAUTH_URL", e.ZEEBE_OAUTH_URL],
    ["CAMUNDA_OAUTH_URL", e.CAMUNDA_OAUTH_URL],
    ["ZEEBE_AUTHORIZATION_SERVER_URL", e.ZEEBE_AUTHORIZATION_SERVER_URL],
  ]);
  const audience = agreed(problems, [
    ["ZEEBE_TOKEN_AUDIENCE", e.ZEEBE_TOKEN_AUDIENCE],
    ["CAMUNDA_ZEEBE_OAUTH_AUDIENCE", e.CAMUNDA_ZEEBE_OAUTH_AUDIENCE],
  ]);
  const strategy = strategyOf(problems, "CAMUNDA_AUTH_STRATEGY", e.CAMUNDA_AUTH_STRATEGY, "NONE", {
    OAUTH: {
      needs: { ZEEBE_CLIENT_ID: e.ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET: e.ZEEBE_CLIENT_SECRET, [oauthUrlName(e)]: oauthUrl },
      takes: { ZEEBE_TOKEN_AUDIENCE: audience, CAMUNDA_TOKEN_SCOPE: e.CAMUNDA_TOKEN_SCOPE },
    },
    BASIC: { needs: { CAMUNDA_BASIC_AUTH_USERNAME: e.CAMUNDA_BASIC_AUTH_USERNAME, CAMUNDA_BASIC_AUTH_PASSWORD: e.CAMUNDA_BASIC_AUTH_PASSWORD } },
    BEARER: { needs: { CAMUNDA_OAUTH_TOKEN: e.CAMUNDA_OAUTH_TOKEN } },
  });
  if (address === undefined || strategy === undefined) return undefined;
  const auth: ZeebeAuth =
    strategy === "OAUTH"
      ? { strategy, ...clientCredentials(oauthUrl!, e.ZEEBE_CLIENT_ID!, e.ZEEBE_CLIENT_SECRET!, audience, e.CAMUNDA_TOKEN_SCOPE) }
      : strategy === "BASIC"
        ? { strategy, username: e.CAMUNDA_BASIC_AUTH_USERNAME!, password: new Secret(e.CAMUNDA_BASIC_AUTH_PASSWORD!) }
        : strategy === "BEARER"
          ? { strategy, token: new Secret(e.CAMUNDA_OAUTH_TOKEN!) }
          : { strategy };
  return { address, tls, mtls, auth };
}

/** The name the OAuth URL was given under, for messages (ZEEBE_OAUTH_URL when none was). */
function oauthUrlName(e: EnvValues): string {
  if (e.ZEEBE_OAUTH_URL === undefined && e.CAMUNDA_OAUTH_URL !== undefined) return "CAMUNDA_OAUTH_URL";
  if (e.ZEEBE_OAUTH_URL === undefined && e.ZEEBE_AUTHORIZATION_SERVER_URL !== undefined) return "ZEEBE_AUTHORIZATION_SERVER_URL";
  return "ZEEBE_OAUTH_URL";
}

/**
 * Every secret value the configuration holds, for the logger's redactor: each {@link Secret}, and
 * the password (or credential parameters) of the database URL.
 */
export function configSecrets(config: Config): string[] {
  return [...secretsIn(config), ...urlSecrets(config.databaseUrl)];
}

function readAuth(e: z.infer<typeof authSchema>, problems: string[]): AuthConfig | undefined {
  const userClaim = e.JWT_USER_CLAIM ?? "sub";
  if (e.AUTH_DISABLED === true) return { disabled: true, userClaim };
  if (e.JWT_SECRET !== undefined && e.JWT_PUBLIC_KEY !== undefined) {
    problems.push("JWT_SECRET and JWT_PUBLIC_KEY are both set: choose one");
    return undefined;
  }
  const common = {
    disabled: false as const,
    userClaim,
    issuer: e.JWT_ISSUER,
    audience: e.JWT_AUDIENCE,
    tenantsClaim: e.JWT_TENANTS_CLAIM ?? "tenants",
    clockSkewSeconds: e.JWT_CLOCK_SKEW_SECONDS ?? 5,
  };
  if (e.JWT_SECRET !== undefined) {
    if (Buffer.byteLength(e.JWT_SECRET) < 32) {
      problems.push("JWT_SECRET must be at least 32 bytes long (HS256 needs a 256-bit key)");
      return undefined;
    }
    return { ...common, key: { kind: "secret", secret: new Secret(e.JWT_SECRET) } };
  }
  if (e.JWT_PUBLIC_KEY !== undefined) {
    let key: KeyObject;
    try {
      // A PEM passed through an environment variable often has its line breaks escaped.
      key = createPublicKey(e.JWT_PUBLIC_KEY.replace(/\\n/g, "\n"));
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
