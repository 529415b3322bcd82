import { createPublicKey, type KeyObject } from "node:crypto";
import { accessSync, constants, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { z } from "zod";
import { EXPRESSION_LIMIT_CEILINGS } from "./calculation/expression-size.js";
import { DEFAULT_DATABASE_TIMEOUTS, DEFAULT_QUERY_TIMEOUT_MS, type DatabaseTimeouts } from "./db/timeouts.js";

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
  /** CAMUNDA_URL: the REST base, e.g. http://localhost:8080/engine-rest. */
  url: string;
  /** CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: long-polling wait of one fetch. Default 10000. */
  asyncResponseTimeoutMs: number;
  /** CAMUNDA_WORKER_ID; absent: `<host>-<pid>-<random>`. */
  workerId: string | undefined;
}

export interface ZeebeSettings extends WorkerSettings {
  /** ZEEBE_ADDRESS: the gateway's `host:port`. */
  address: string;
  /** ZEEBE_TLS: TLS to the gateway. Default false: plaintext. */
  tls: boolean;
  /** CAMUNDA_CUSTOM_ROOT_CERT_PATH: a PEM file of the CA the gateway's certificate comes from; absent: the public CAs. */
  rootCertPath: string | undefined;
  /** ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET, ZEEBE_OAUTH_URL (all three or none), ZEEBE_TOKEN_AUDIENCE optional. */
  oauth: ZeebeOAuth | undefined;
  /** ZEEBE_TENANT_IDS: the tenants whose jobs the workers activate; absent: the gateway's default tenant. */
  tenantIds: string[] | undefined;
  /** ZEEBE_STREAM_JOBS: jobs pushed over a job stream (StreamActivatedJobs), polling beside it as a fallback. Default false: long polling only. */
  streamJobs: boolean;
  /** ZEEBE_STREAM_POLL_INTERVAL_MS: with streaming, the pause between fallback polls that found no job. Default 10000. */
  streamPollIntervalMs: number;
}

export interface ZeebeOAuth {
  url: string;
  clientId: string;
  clientSecret: string;
  audience?: string;
}

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
  return { url, ...workerSettings(given), asyncResponseTimeoutMs: given.asyncResponseTimeoutMs ?? 10_000, workerId: given.workerId };
}

/** Zeebe settings for the gateway at `address`, the rest given or defaulted. */
export function zeebeSettings(address: string, given: Given<ZeebeSettings> = {}): ZeebeSettings {
  return {
    address,
    ...workerSettings(given),
    tls: given.tls ?? false,
    rootCertPath: given.rootCertPath,
    oauth: given.oauth,
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
      key: { kind: "secret"; secret: Uint8Array } | { kind: "public"; key: KeyObject; algorithm: "RS256" | "ES256" };
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
  ZEEBE_TLS: booleanFlag("ZEEBE_TLS").optional(),
  CAMUNDA_CUSTOM_ROOT_CERT_PATH: optionalText.refine((v) => v === undefined || isReadableFile(v), "CAMUNDA_CUSTOM_ROOT_CERT_PATH must be a readable PEM file"),
  TOPIC_API_REQUEST: optionalText,
  TOPIC_CALCULATE_SERIES: optionalText,
  WORKER_MAX_TASKS: integer("WORKER_MAX_TASKS", 1, 1000).optional(),
  WORKER_LOCK_DURATION_MS: integer("WORKER_LOCK_DURATION_MS", 1000, 86_400_000).optional(),
  CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: integer("CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS", 0, 600_000).optional(),
  WORKER_DEFAULT_RETRIES: integer("WORKER_DEFAULT_RETRIES", 0, 100).optional(),
  CAMUNDA_WORKER_ID: optionalText,
  ZEEBE_CLIENT_ID: optionalText,
  ZEEBE_CLIENT_SECRET: optionalText,
  ZEEBE_OAUTH_URL: optionalText.refine((v) => v === undefined || isUrl(v, ["http:", "https:"]), "ZEEBE_OAUTH_URL must be an http(s) URL"),
  ZEEBE_TOKEN_AUDIENCE: optionalText,
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
  ZEEBE_ADDRESS: optionalText.refine(
    (v) => v === undefined || /^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(v),
    "ZEEBE_ADDRESS must be host:port, like localhost:26500",
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
  if (parsed.success && role === "worker" && parsed.data.CAMUNDA_URL === undefined && parsed.data.ZEEBE_ADDRESS === undefined) {
    problems.push("the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS (Zeebe) or both");
  }
  if (parsed.success) {
    const oauth = [parsed.data.ZEEBE_CLIENT_ID, parsed.data.ZEEBE_CLIENT_SECRET, parsed.data.ZEEBE_OAUTH_URL];
    if (oauth.some((v) => v !== undefined) && oauth.some((v) => v === undefined)) {
      problems.push("ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET and ZEEBE_OAUTH_URL go together: set all three for OAuth, or none");
    }
    // A graph query is a database statement: its own time-out cannot be the longer one.
    const graphTimeout = parsed.data.QUERY_TIMEOUT_MS ?? DEFAULT_QUERY_TIMEOUT_MS;
    const statementTimeout = parsed.data.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs;
    if (graphTimeout > statementTimeout) {
      problems.push(`QUERY_TIMEOUT_MS (${graphTimeout}) must not be longer than DATABASE_STATEMENT_TIMEOUT_MS (${statementTimeout})`);
    }
  }
  const engines = parsed.success ? readEngines(parsed.data) : undefined;
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

/** The engines whose address is set, with their worker settings. */
function readEngines(e: EnvValues): Pick<Config, "camunda7" | "zeebe"> {
  const given = {
    topics: { apiRequest: e.TOPIC_API_REQUEST, calculateSeries: e.TOPIC_CALCULATE_SERIES },
    maxTasks: e.WORKER_MAX_TASKS,
    lockDurationMs: e.WORKER_LOCK_DURATION_MS,
    defaultRetries: e.WORKER_DEFAULT_RETRIES,
  };
  const oauth =
    e.ZEEBE_CLIENT_ID !== undefined && e.ZEEBE_CLIENT_SECRET !== undefined && e.ZEEBE_OAUTH_URL !== undefined
      ? { url: e.ZEEBE_OAUTH_URL, clientId: e.ZEEBE_CLIENT_ID, clientSecret: e.ZEEBE_CLIENT_SECRET, ...(e.ZEEBE_TOKEN_AUDIENCE !== undefined ? { audience: e.ZEEBE_TOKEN_AUDIENCE } : {}) }
      : undefined;
  return {
    camunda7: e.CAMUNDA_URL === undefined ? undefined : camunda7Settings(e.CAMUNDA_URL, { ...given, asyncResponseTimeoutMs: e.CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS, workerId: e.CAMUNDA_WORKER_ID }),
    zeebe: e.ZEEBE_ADDRESS === undefined ? undefined : zeebeSettings(e.ZEEBE_ADDRESS, { ...given, tls: e.ZEEBE_TLS, rootCertPath: e.CAMUNDA_CUSTOM_ROOT_CERT_PATH, oauth,
          tenantIds: e.ZEEBE_TENANT_IDS,
          streamJobs: e.ZEEBE_STREAM_JOBS,
          streamPollIntervalMs: e.ZEEBE_STREAM_POLL_INTERVAL_MS,
        }),
  };
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
    return { ...common, key: { kind: "secret", secret: new TextEncoder().encode(e.JWT_SECRET) } };
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
